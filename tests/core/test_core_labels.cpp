#include "core/labels.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using taskq::core::LabelPattern;
using taskq::core::Labels;
namespace core = taskq::core;

namespace {

// Patterns from `K=V` texts, each required to parse.
std::vector<LabelPattern> patterns(std::initializer_list<const char*> texts) {
  std::vector<LabelPattern> out;
  for (const auto* text : texts) {
    const auto p = core::parse_label_pattern(text);
    REQUIRE_MESSAGE(p, text);
    out.push_back(*p);
  }
  return out;
}

const Labels k_image{{"kind", "image"}, {"size", "large"}, {"env", "prod"}};

} // namespace

TEST_CASE("a label is K=V") {
  const auto l = core::parse_label("kind=image");
  REQUIRE(l);
  CHECK(l->first == "kind");
  CHECK(l->second == "image");
}

TEST_CASE("a label value may be empty") {
  const auto l = core::parse_label("kind=");
  REQUIRE(l);
  CHECK(l->first == "kind");
  CHECK(l->second.empty());
}

TEST_CASE("a label value is split at the first =") {
  const auto l = core::parse_label("expr=a=b");
  REQUIRE(l);
  CHECK(l->first == "expr");
  CHECK(l->second == "a=b");
}

TEST_CASE("a label value may hold spaces, punctuation and UTF-8") {
  CHECK(core::parse_label("note=hello world")->second == "hello world");
  CHECK(core::parse_label("v=*")->second == "*");
  CHECK(core::parse_label("city=Zürich")->second == "Zürich");
  CHECK(core::parse_label("path=/a/b?c&d")->second == "/a/b?c&d");
}

TEST_CASE("a label key may use letters, digits and . _ / -") {
  CHECK(core::parse_label("A-z_0.9/x=1")->first == "A-z_0.9/x");
  CHECK(core::parse_label("k=1"));
  CHECK(core::parse_label(std::string(128, 'k') + "=v"));
  CHECK_FALSE(core::parse_label(std::string(129, 'k') + "=v"));
}

TEST_CASE("malformed labels are refused") {
  for (const auto* text : {
           "",           // empty
           "kind",       // missing =
           "=image",     // empty key
           "=",          // empty key and value
           "ki nd=x",    // space in key
           " kind=x",    // leading space
           "kind =x",    // space before =
           "ki*nd=x",    // star in key
           "*=x",        // a pattern, not a label
           "kind*=x",    // a pattern, not a label
           "ki:nd=x",    // colon
           "ki@nd=x",    // at
           "kïnd=x",     // non-ASCII key
           "kind=a\tb",  // control character in value
           "kind=a\nb",  // newline in value
           "kind=a\x7f", // DEL in value
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_label(text));
  }
}

TEST_CASE("label patterns accept exact keys, *, and keys with a * at either "
          "end or both") {
  CHECK(core::parse_label_pattern("kind=image")->key == "kind");
  CHECK(core::parse_label_pattern("*=image")->key == "*");
  CHECK(core::parse_label_pattern("ki*=image")->key == "ki*");
  CHECK(core::parse_label_pattern("*nd=image")->key == "*nd");
  CHECK(core::parse_label_pattern("kind=*")->value == "*");
  CHECK(core::parse_label_pattern("kind=")->value.empty());
  CHECK(core::parse_label_pattern("*=*"));
  CHECK(core::parse_label_pattern("*rescue.io*=*")->key == "*rescue.io*");
  CHECK(core::parse_label_pattern("*.api.io/*=v"));
  CHECK(core::parse_label_pattern(std::string(128, 'k') + "*=v"));
}

TEST_CASE("malformed label patterns are refused") {
  for (const auto* text : {
           "",          // empty
           "kind",      // missing =
           "=x",        // empty key
           "**=x",      // star twice
           "ki*nd=x",   // inside
           "k**=x",     // doubled
           "**k=x",     // doubled
           "*k**=x",    // doubled
           "***=x",     // nothing left
           "ki nd=x",   // bad key char
           "kind=a\tb", // control character
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_label_pattern(text));
  }
  CHECK_FALSE(core::parse_label_pattern(std::string(129, 'k') + "*=v"));
}

TEST_CASE("an exact pattern matches only the same key and value") {
  CHECK(core::matches(k_image, patterns({"kind=image"})));
  CHECK_FALSE(core::matches(k_image, patterns({"kind=video"})));
  CHECK_FALSE(core::matches(k_image, patterns({"kinds=image"})));
  CHECK_FALSE(core::matches(k_image, patterns({"kin=image"})));
  CHECK_FALSE(core::matches(k_image, patterns({"Kind=image"})));
  CHECK_FALSE(core::matches(k_image, patterns({"kind=Image"})));
  CHECK_FALSE(core::matches(k_image, patterns({"kind=imag"})));
}

TEST_CASE("a * key matches any key with that value") {
  CHECK(core::matches(k_image, patterns({"*=prod"})));
  CHECK(core::matches(k_image, patterns({"*=large"})));
  CHECK_FALSE(core::matches(k_image, patterns({"*=small"})));
}

TEST_CASE("a trailing * key matches keys that hold the rest") {
  const Labels labels{{"region-eu", "1"}, {"zone", "a"}};
  CHECK(core::matches(labels, patterns({"region*=1"})));
  CHECK(core::matches(labels, patterns({"reg*=1"})));
  CHECK(core::matches(labels, patterns({"region-eu*=1"}))); // * may be empty
  CHECK(core::matches(labels, patterns({"eu*=1"}))); // anywhere in the key
  CHECK_FALSE(core::matches(labels, patterns({"us*=1"})));
  CHECK_FALSE(core::matches(labels, patterns({"region*=2"})));
  CHECK_FALSE(core::matches(labels, patterns({"region-eu-west*=1"})));
}

TEST_CASE("a leading * key matches keys that hold the rest") {
  const Labels labels{{"region-eu", "1"}, {"zone", "a"}};
  CHECK(core::matches(labels, patterns({"*-eu=1"})));
  CHECK(core::matches(labels, patterns({"*one=a"})));
  CHECK(core::matches(labels, patterns({"*zone=a"})));   // * may be empty
  CHECK(core::matches(labels, patterns({"*region=1"}))); // anywhere
  CHECK_FALSE(core::matches(labels, patterns({"*-us=1"})));
  CHECK_FALSE(core::matches(labels, patterns({"*-eu=2"})));
}

TEST_CASE("wildcard keys match what is left anywhere in the key") {
  // rescue's matcher: one leading and one trailing * stripped, the rest a
  // substring of the key.
  const Labels labels{{"my-region-eu", "1"}};
  CHECK(core::matches(labels, patterns({"region*=1"})));
  CHECK(core::matches(labels, patterns({"*region=1"})));
  CHECK(core::matches(labels, patterns({"*region*=1"})));
  CHECK(core::matches(labels, patterns({"*my-region-eu*=1"})));
  CHECK_FALSE(core::matches(labels, patterns({"*regions*=1"})));
  const Labels rescue{{"task.rescue.io/worker", "w1"}, {"x.api.io/v", "2"}};
  CHECK(core::matches(rescue, patterns({"*rescue.io*=w1"})));
  CHECK(core::matches(rescue, patterns({"*.api.io/*=2"})));
  CHECK_FALSE(core::matches(rescue, patterns({"*.api.io/*=w1"})));
}

TEST_CASE("a key without * is matched whole, not as a part of a key") {
  const Labels labels{{"my-region-eu", "1"}};
  CHECK_FALSE(core::matches(labels, patterns({"region=1"})));
  CHECK(core::matches(labels, patterns({"my-region-eu=1"})));
}

TEST_CASE("the value must belong to a label whose key matched") {
  // `size` has `large`, but the key pattern selects only `kind`.
  CHECK_FALSE(core::matches(k_image, patterns({"kind=large"})));
  CHECK_FALSE(core::matches(k_image, patterns({"k*=large"})));
  // Of several matching keys, one with the right value is enough.
  const Labels labels{{"tier-a", "x"}, {"tier-b", "y"}};
  CHECK(core::matches(labels, patterns({"tier*=y"})));
  CHECK(core::matches(labels, patterns({"tier*=x"})));
  CHECK_FALSE(core::matches(labels, patterns({"tier*=z"})));
}

TEST_CASE("a * value matches any value, including empty") {
  CHECK(core::matches(k_image, patterns({"kind=*"})));
  CHECK(core::matches(Labels{{"kind", ""}}, patterns({"kind=*"})));
  CHECK_FALSE(core::matches(k_image, patterns({"color=*"})));
  CHECK(core::matches(k_image, patterns({"*=*"})));
}

TEST_CASE("an empty value pattern matches only an empty value") {
  CHECK(core::matches(Labels{{"kind", ""}}, patterns({"kind="})));
  CHECK_FALSE(core::matches(k_image, patterns({"kind="})));
}

TEST_CASE("several patterns must all match") {
  CHECK(core::matches(k_image, patterns({"kind=image", "env=prod"})));
  CHECK(core::matches(k_image, patterns({"kind=image", "s*=large", "*=prod"})));
  CHECK_FALSE(core::matches(k_image, patterns({"kind=image", "env=dev"})));
  CHECK_FALSE(core::matches(k_image, patterns({"env=dev", "kind=image"})));
  CHECK_FALSE(core::matches(k_image, patterns({"kind=image", "color=*"})));
}

TEST_CASE("an empty pattern list matches everything") {
  CHECK(core::matches(k_image, {}));
  CHECK(core::matches(Labels{}, {}));
}

TEST_CASE("*=* matches every task, even one without labels") {
  CHECK(core::matches(Labels{}, patterns({"*=*"})));
  CHECK(core::matches(k_image, patterns({"*=*"})));
  // Beside another pattern it asks nothing more.
  CHECK(core::matches(k_image, patterns({"*=*", "kind=image"})));
  CHECK_FALSE(core::matches(Labels{}, patterns({"*=*", "kind=*"})));
}

TEST_CASE("a task without labels matches no other pattern") {
  CHECK_FALSE(core::matches(Labels{}, patterns({"*=x"})));
  CHECK_FALSE(core::matches(Labels{}, patterns({"kind=*"})));
  CHECK_FALSE(core::matches(Labels{}, patterns({"kind="})));
  CHECK_FALSE(core::matches(Labels{}, patterns({"*kind*=*"})));
}

TEST_CASE("an unparsed empty key pattern matches nothing") {
  CHECK_FALSE(core::matches(k_image, {LabelPattern{"", "*"}}));
}

TEST_CASE("format_labels: k=v in key order, joined by the separator") {
  CHECK(core::format_labels({}) == "");
  CHECK(core::format_labels({{"b", "2"}, {"a", "1"}}) == "a=1,b=2");
  CHECK(core::format_labels({{"b", "2"}, {"a", ""}}, " ") == "a= b=2");
}
