# tests/multihost/netns.bash: several "hosts" on this machine, sourced by
# tests/multihost/run and bench/pg (section e). Needs root and iproute2.
#
# netns_up TAG NET HOSTS makes the namespace TAG-db holding a bridge br0
# with the address NET.1/24, and TAG-h1..TAG-hHOSTS, each with a veth pair
# whose eth0 end (NET.(10+k)/24) is in the host and whose other end is on
# the bridge. Nothing is configured in the root namespace, so a server run
# in TAG-db (`ip netns exec TAG-db ...`, listening on NET.1) is reached
# from the hosts over TCP only; Unix sockets, being files, still reach it
# from anywhere. Every namespace made is appended to netns_made, also when
# a later step fails, so that the caller's trap can remove them with
# netns_del. Returns non-zero (ip's message on stderr) when a step fails.

netns_made=()

# netns_subnet N: a /24 picked from the number N (a pid): 10.200-249.x.
netns_subnet() {
  echo "10.$((200 + ($1 / 250) % 50)).$(($1 % 250))"
}

netns_up() {
  local tag=$1 net=$2 hosts=$3 db=$1-db k ns
  ip netns add "$db" || return 1
  netns_made+=("$db")
  ip netns exec "$db" ip link set lo up &&
    ip netns exec "$db" ip link add br0 type bridge &&
    ip netns exec "$db" ip addr add "$net.1/24" dev br0 &&
    ip netns exec "$db" ip link set br0 up || return 1
  for ((k = 1; k <= hosts; k++)); do
    ns=$tag-h$k
    ip netns add "$ns" || return 1
    netns_made+=("$ns")
    ip link add "v$k" netns "$db" type veth peer name eth0 netns "$ns" &&
      ip netns exec "$db" ip link set "v$k" master br0 &&
      ip netns exec "$db" ip link set "v$k" up &&
      ip netns exec "$ns" ip link set lo up &&
      ip netns exec "$ns" ip addr add "$net.$((10 + k))/24" dev eth0 &&
      ip netns exec "$ns" ip link set eth0 up || return 1
  done
}

# netns_kill NS: SIGKILL to every process in the namespace NS.
netns_kill() {
  local pid
  for pid in $(ip netns pids "$1"); do kill -KILL "$pid"; done
}

# netns_del: removes every namespace netns_up made (their veths go too).
netns_del() {
  local ns
  for ns in "${netns_made[@]}"; do ip netns del "$ns"; done
  netns_made=()
}
