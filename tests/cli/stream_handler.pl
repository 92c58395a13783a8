#!/usr/bin/perl
# The handler tests/cli/stream*.sh run with `taskq run --stream`. Each task's
# payload says what to do with it ({"do":"done","result":...}, ...). It logs
# what it sees to $STREAM_LOG (one line each, appended) and each task's
# handler pid to h/ID.pid.
use strict;
use warnings;
use JSON::PP;
$| = 1;
my $json = JSON::PP->new->canonical->allow_nonref;
my $log = $ENV{STREAM_LOG} // "stream.log";
sub note {
  open(my $f, ">>", $log) or die "log: $!";
  print $f "@_\n";
  close $f;
}
sub answer { print $json->encode($_[0]), "\n"; }
note("start $$");
while (my $line = <STDIN>) {
  my $msg = $json->decode($line);
  if (my $c = $msg->{cancel}) {
    note("cancel $c->{id} $c->{reason}");
    answer({id => $c->{id}, fail => "cancelled"}) if $ENV{STREAM_OBEY};
    next;
  }
  my $t = $msg->{task} or die "not a task: $line";
  my ($id, $p) = ($t->{id}, $t->{payload});
  note("task $id attempt $t->{attempts}");
  if (open(my $f, ">", "h/$id.pid")) { print $f "$$\n"; close $f; }
  my $do = ref $p eq "HASH" ? $p->{do} // "done" : "done";
  if ($do eq "done") {
    answer({id => $id, done => $p->{result}});
  } elsif ($do eq "fail") {
    my %a = (id => $id, fail => $p->{error});
    $a{retry} = JSON::PP::false if $p->{noretry};
    answer(\%a);
  } elsif ($do eq "release") {
    answer({id => $id, release => {delay => $p->{delay}}});
  } elsif ($do eq "beat") {
    answer({id => $id, heartbeat => JSON::PP::true});
    answer({id => $id, checkpoint => {step => 1}});
    answer({id => $id, done => $t->{checkpoint}});
  } elsif ($do eq "die") {
    # The first time it waits to be killed; the next completes.
    if (-e "h/$id.died") { answer({id => $id, done => "second"}); }
    else { open(my $f, ">", "h/$id.died"); close $f; }
  } elsif ($do eq "garbage") {
    print "this is not JSON\n";
  } elsif ($do eq "noverb") {
    answer({id => $id});
  } elsif ($do eq "twoverbs") {
    answer({id => $id, done => 1, fail => "x"});
  } elsif ($do eq "after") {
    # Answers once the test writes a line to the FIFO h/ID.go.
    open(my $f, "<", "h/$id.go") or die "h/$id.go: $!";
    my $go = <$f>;
    close $f;
    answer({id => $id, done => $p->{result}});
  } elsif ($do eq "hold") {
    # No answer: the next line (a cancel, or EOF) is read at once.
  }
}
note("eof $$");
