// The memcached protocol layer (apps/memcached): both protocols through a
// Session over a LocalStore, with injected time.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fox/memcached/local_store.h"
#include "fox/memcached/protocol.h"
#include "fox/memcached/session.h"

namespace fox::memcached {
namespace {

constexpr Time kNow = 1'700'000'000;

// Feeds everything (as the session takes it), runs, and returns the output.
std::string Talk(Session& s, Store& store, std::string_view in, Time now = kNow) {
  std::string out;
  for (;;) {
    size_t n = s.Feed(in.data(), in.size());
    in.remove_prefix(n);
    Session::Step step = s.Run(store, now);
    out.append(s.Output());
    s.Consume(s.Output().size());
    if (in.empty() && step != Session::Step::kDrainOutput) break;
    if (step == Session::Step::kClose) break;
  }
  return out;
}

// Feeds `in` in pieces of the given sizes (cycled), collecting the output.
std::string TalkChunked(std::string_view in, const std::vector<size_t>& sizes, Session::Options options = {}) {
  LocalStore store;
  Session s(options);
  std::string out;
  size_t i = 0;
  while (!in.empty()) {
    size_t n = std::min(in.size(), sizes[i++ % sizes.size()]);
    out += Talk(s, store, in.substr(0, n));
    in.remove_prefix(n);
  }
  return out;
}

struct Fixture : ::testing::Test {
  std::string T(std::string_view in, Time now = kNow) { return Talk(session, store, in, now); }
  LocalStore store;
  Counters counters;
  Session session{Session::Options{kDefaultMaxValueBytes, 1 << 20, &counters}};
};

using MemcachedText = Fixture;

TEST_F(MemcachedText, SetGetGets) {
  EXPECT_EQ(T("set a 5 0 3\r\nabc\r\n"), "STORED\r\n");
  EXPECT_EQ(T("get a\r\n"), "VALUE a 5 3\r\nabc\r\nEND\r\n");
  std::string gets = T("gets a\r\n");
  EXPECT_EQ(gets.rfind("VALUE a 5 3 ", 0), 0u) << gets;
  EXPECT_EQ(T("get nope\r\n"), "END\r\n");
  EXPECT_EQ(T("set e 0 0 0\r\n\r\nget e\n"), "STORED\r\nVALUE e 0 0\r\n\r\nEND\r\n");  // bare "\n" ends a line
}

TEST_F(MemcachedText, MultiGet) {
  T("set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\n");
  EXPECT_EQ(T("get a x b\r\n"), "VALUE a 0 1\r\n1\r\nVALUE b 0 1\r\n2\r\nEND\r\n");
  EXPECT_EQ(counters.cmd_get, 3u);
  EXPECT_EQ(counters.get_hits, 2u);
  EXPECT_EQ(counters.get_misses, 1u);
}

TEST_F(MemcachedText, AddReplaceAppendPrepend) {
  EXPECT_EQ(T("add k 0 0 1\r\na\r\n"), "STORED\r\n");
  EXPECT_EQ(T("add k 0 0 1\r\nb\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(T("replace k 7 0 1\r\nc\r\n"), "STORED\r\n");
  EXPECT_EQ(T("replace q 0 0 1\r\nc\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(T("append k 0 0 2\r\nde\r\n"), "STORED\r\n");
  EXPECT_EQ(T("prepend k 0 0 2\r\nab\r\n"), "STORED\r\n");
  EXPECT_EQ(T("append q 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(T("prepend q 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(T("get k\r\n"), "VALUE k 7 5\r\nabcde\r\nEND\r\n");  // append keeps the flags
}

TEST_F(MemcachedText, Noreply) {
  EXPECT_EQ(T("set k 0 0 1 noreply\r\na\r\n"), "");
  EXPECT_EQ(T("add k 0 0 1 noreply\r\na\r\n"), "");
  EXPECT_EQ(T("replace k 0 0 1 noreply\r\nb\r\n"), "");
  EXPECT_EQ(T("append k 0 0 1 noreply\r\nc\r\n"), "");
  EXPECT_EQ(T("prepend k 0 0 1 noreply\r\nd\r\n"), "");
  EXPECT_EQ(T("cas k 0 0 1 1 noreply\r\ne\r\n"), "");
  EXPECT_EQ(T("get k\r\n"), "VALUE k 0 3\r\ndbc\r\nEND\r\n");
  EXPECT_EQ(T("set n 0 0 1\r\n5\r\nincr n 2 noreply\r\ndecr n 1 noreply\r\nget n\r\n"),
            "STORED\r\nVALUE n 0 1\r\n6\r\nEND\r\n");
  EXPECT_EQ(T("touch n 10 noreply\r\ndelete n noreply\r\nflush_all noreply\r\nflush_all 0 noreply\r\n"), "");
  EXPECT_EQ(T("verbosity 1 noreply\r\ndelete n 0 noreply\r\nget n\r\n"), "END\r\n");
  // As memcached 1.6: noreply is the last token, and silences errors too;
  // version ignores its arguments; stats has no noreply.
  EXPECT_EQ(T("verbosity noreply\r\n"), "");
  EXPECT_EQ(T("set n 0 0 1 noreply\r\n0\r\nincr n x noreply\r\nincr n 1 2\r\n"), "1\r\n");
  EXPECT_EQ(T("version noreply\r\n"), std::string("VERSION ") + kVersionString + "\r\n");
  EXPECT_EQ(T("stats noreply\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("set q 0 0 noreply\r\nget q\r\n"), "END\r\n");
  EXPECT_EQ(T("set q 0 0 1 whatever\r\na\r\n"), "STORED\r\n");  // not noreply: ignored
}

TEST_F(MemcachedText, Cas) {
  EXPECT_EQ(T("cas k 0 0 1 99\r\na\r\n"), "NOT_FOUND\r\n");
  T("set k 0 0 1\r\na\r\n");
  std::string gets = T("gets k\r\n");
  uint64_t cas = std::stoull(gets.substr(std::string("VALUE k 0 1 ").size()));
  EXPECT_EQ(T("cas k 0 0 1 " + std::to_string(cas + 1) + "\r\nb\r\n"), "EXISTS\r\n");
  EXPECT_EQ(T("cas k 0 0 1 " + std::to_string(cas) + "\r\nb\r\n"), "STORED\r\n");
  EXPECT_EQ(T("cas k 0 0 1 " + std::to_string(cas) + "\r\nc\r\n"), "EXISTS\r\n");
  EXPECT_EQ(T("get k\r\n"), "VALUE k 0 1\r\nb\r\nEND\r\n");
  EXPECT_EQ(counters.cas_misses, 1u);
  EXPECT_EQ(counters.cas_hits, 1u);
  EXPECT_EQ(counters.cas_badval, 2u);
  EXPECT_EQ(T("cas k 0 0 1\r\nc\r\n"), "ERROR\r\nERROR\r\n");  // missing cas: the data line is a command
}

TEST_F(MemcachedText, CasRaceBetweenTwoConnections) {
  Session other(Session::Options{kDefaultMaxValueBytes, 1 << 20, &counters});
  T("set k 0 0 1\r\na\r\n");
  std::string mine = T("gets k\r\n");
  std::string theirs = Talk(other, store, "gets k\r\n");
  ASSERT_EQ(mine, theirs);
  std::string cas = mine.substr(12, mine.find("\r\n") - 12);
  EXPECT_EQ(Talk(other, store, "cas k 0 0 5 " + cas + "\r\nthem!\r\n"), "STORED\r\n");
  EXPECT_EQ(T("cas k 0 0 2 " + cas + "\r\nme\r\n"), "EXISTS\r\n");
  EXPECT_EQ(T("get k\r\n"), "VALUE k 0 5\r\nthem!\r\nEND\r\n");
  EXPECT_EQ(counters.curr_connections, 2u);
}

TEST_F(MemcachedText, Delete) {
  T("set k 0 0 1\r\na\r\n");
  EXPECT_EQ(T("delete k\r\n"), "DELETED\r\n");
  EXPECT_EQ(T("delete k\r\n"), "NOT_FOUND\r\n");
  T("set k 0 0 1\r\na\r\n");
  EXPECT_EQ(T("delete k 0\r\n"), "DELETED\r\n");
  EXPECT_EQ(T("delete\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("delete a b c d e\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("delete k 5\r\n"), "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
}

TEST_F(MemcachedText, IncrDecr) {
  T("set n 0 0 2\r\n10\r\n");
  EXPECT_EQ(T("incr n 5\r\n"), "15\r\n");
  EXPECT_EQ(T("decr n 3\r\n"), "12\r\n");
  EXPECT_EQ(T("decr n 100\r\n"), "0\r\n");  // floors at 0
  T("set n 0 0 20\r\n18446744073709551615\r\n");
  EXPECT_EQ(T("incr n 2\r\n"), "1\r\n");  // wraps
  EXPECT_EQ(T("get n\r\n"), "VALUE n 0 1\r\n1\r\nEND\r\n");
  EXPECT_EQ(T("incr missing 1\r\n"), "NOT_FOUND\r\n");
  T("set s 0 0 3\r\nabc\r\n");
  EXPECT_EQ(T("incr s 1\r\n"), "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  EXPECT_EQ(T("decr s 1\r\n"), "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  EXPECT_EQ(T("incr n -1\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  EXPECT_EQ(T("incr n abc\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  EXPECT_EQ(T("incr n\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("incr n 1 2 3\r\n"), "ERROR\r\n");
}

TEST_F(MemcachedText, ExpiryWithInjectedTime) {
  T("set rel 0 10 1\r\na\r\n");                                  // relative
  T("set abs 0 " + std::to_string(kNow + 100) + " 1\r\nb\r\n");  // absolute
  T("set neg 0 -1 1\r\nc\r\n");                                  // already expired
  T("set past 0 " + std::to_string(kNow - 5) + " 1\r\nd\r\n");   // absolute, in the past
  T("set month 0 2592000 1\r\ne\r\n");                           // exactly 30 days: relative
  EXPECT_EQ(T("get neg past\r\n"), "END\r\n");
  EXPECT_EQ(T("get rel abs\r\n", kNow + 9), "VALUE rel 0 1\r\na\r\nVALUE abs 0 1\r\nb\r\nEND\r\n");
  EXPECT_EQ(T("get rel\r\n", kNow + 10), "END\r\n");
  EXPECT_EQ(T("get abs\r\n", kNow + 99), "VALUE abs 0 1\r\nb\r\nEND\r\n");
  EXPECT_EQ(T("get abs month\r\n", kNow + 100), "VALUE month 0 1\r\ne\r\nEND\r\n");
  EXPECT_EQ(T("get month\r\n", kNow + 2592000), "END\r\n");
}

TEST_F(MemcachedText, TouchGatGats) {
  T("set k 3 10 1\r\na\r\n");
  EXPECT_EQ(T("touch k 100\r\n", kNow + 5), "TOUCHED\r\n");
  EXPECT_EQ(T("touch nope 100\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(T("get k\r\n", kNow + 50), "VALUE k 3 1\r\na\r\nEND\r\n");
  EXPECT_EQ(T("gat 10 k nope\r\n", kNow + 50), "VALUE k 3 1\r\na\r\nEND\r\n");
  EXPECT_EQ(T("get k\r\n", kNow + 59), "VALUE k 3 1\r\na\r\nEND\r\n");
  std::string gats = T("gats 0 k\r\n", kNow + 59);
  EXPECT_EQ(gats.rfind("VALUE k 3 1 ", 0), 0u) << gats;
  EXPECT_EQ(T("get k\r\n", kNow + 100000), "VALUE k 3 1\r\na\r\nEND\r\n");  // 0: never
  EXPECT_EQ(T("gat -1 k\r\n"), "VALUE k 3 1\r\na\r\nEND\r\n");
  EXPECT_EQ(T("get k\r\n"), "END\r\n");
  EXPECT_EQ(T("gat x k\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(T("touch k x\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(T("gat 10\r\n"), "ERROR\r\n");
}

TEST_F(MemcachedText, FlushAll) {
  T("set a 0 0 1\r\na\r\n");
  EXPECT_EQ(T("flush_all\r\n"), "OK\r\n");
  EXPECT_EQ(T("get a\r\n"), "END\r\n");
  T("set a 0 0 1\r\na\r\n");
  EXPECT_EQ(T("flush_all 10\r\n"), "OK\r\n");
  T("set b 0 0 1\r\nb\r\n", kNow + 5);  // stored before the deadline: flushed too
  EXPECT_EQ(T("get a b\r\n", kNow + 9), "VALUE a 0 1\r\na\r\nVALUE b 0 1\r\nb\r\nEND\r\n");
  EXPECT_EQ(T("get a b\r\n", kNow + 10), "END\r\n");
  T("set c 0 0 1\r\nc\r\n", kNow + 11);
  EXPECT_EQ(T("get c\r\n", kNow + 12), "VALUE c 0 1\r\nc\r\nEND\r\n");
  EXPECT_EQ(T("flush_all x\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(T("flush_all x noreply\r\n"), "");
  EXPECT_EQ(T("flush_all 1 2 3\r\n"), "ERROR\r\n");
  EXPECT_EQ(counters.cmd_flush, 2u);
}

TEST_F(MemcachedText, StatsVersionVerbosityQuit) {
  T("set a 0 0 1\r\na\r\nget a b\r\n");
  std::string stats = T("stats\r\n", kNow + 7);
  for (const char* field : {"uptime", "time", "version", "curr_items", "total_items", "bytes", "cmd_get", "cmd_set",
                            "get_hits", "get_misses", "curr_connections"}) {
    EXPECT_NE(stats.find(std::string("STAT ") + field + " "), std::string::npos) << field;
  }
  EXPECT_NE(stats.find("STAT curr_items 1\r\n"), std::string::npos);
  EXPECT_NE(stats.find("STAT bytes 2\r\n"), std::string::npos);
  EXPECT_NE(stats.find("STAT get_hits 1\r\nSTAT get_misses 1\r\n"), std::string::npos);
  EXPECT_NE(stats.find("STAT time " + std::to_string(kNow + 7) + "\r\n"), std::string::npos);
  EXPECT_EQ(stats.substr(stats.size() - 5), "END\r\n");
  EXPECT_EQ(T("stats items\r\n"), "END\r\n");
  EXPECT_EQ(T("stats bogus\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("stats reset\r\n"), "RESET\r\n");
  EXPECT_EQ(counters.get_hits, 0u);
  EXPECT_EQ(T("version\r\n"), std::string("VERSION ") + kVersionString + "\r\n");
  EXPECT_EQ(T("version x y\r\n"), std::string("VERSION ") + kVersionString + "\r\n");
  EXPECT_EQ(T("verbosity 1\r\n"), "OK\r\n");
  EXPECT_EQ(T("verbosity\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("verbosity foo bar my\r\n"), "ERROR\r\n");
  EXPECT_FALSE(session.closing());
  EXPECT_EQ(T("quit\r\nget a\r\n"), "");
  EXPECT_TRUE(session.closing());
  Session other;
  EXPECT_EQ(Talk(other, store, "quit foo bar\r\nget a\r\n"), "");  // arguments ignored
  EXPECT_TRUE(other.closing());
}

TEST_F(MemcachedText, Errors) {
  EXPECT_EQ(T("bogus\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("get\r\n"), "ERROR\r\n");
  std::string long_key(251, 'k');
  EXPECT_EQ(T("get " + long_key + "\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(T("get " + std::string(250, 'k') + "\r\n"), "END\r\n");
  EXPECT_EQ(T("get a\x01"
              "b\r\n"),
            "CLIENT_ERROR bad command line format\r\n");
  // A bad key: the data block is skipped, the stream stays in step.
  EXPECT_EQ(T("set " + long_key + " 0 0 3\r\nabc\r\nget a\r\n"), "CLIENT_ERROR bad command line format\r\nEND\r\n");
  EXPECT_EQ(T("set k x 0 3\r\nabc\r\nget a\r\n"), "CLIENT_ERROR bad command line format\r\nEND\r\n");
  EXPECT_EQ(T("set k 0 0 -1\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(T("set k 0 0 3 extra\r\nabc\r\n"), "STORED\r\n");  // as memcached: not noreply, ignored
  EXPECT_EQ(T("set k 0 0\r\n"), "ERROR\r\n");
  EXPECT_EQ(T("set k2 0 0 3\r\nabcde\r\nget k2\r\n"), "CLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n");
  EXPECT_GT(counters.protocol_errors, 0u);
}

TEST_F(MemcachedText, TooLargeIsSwallowedAndUnlinks) {
  T("set big 0 0 1\r\na\r\n");
  std::string value(kDefaultMaxValueBytes + 1, 'v');
  EXPECT_EQ(T("set big 0 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\nget big\r\n"),
            "SERVER_ERROR object too large for cache\r\nEND\r\n");
  EXPECT_EQ(T("set ok 0 0 " + std::to_string(kDefaultMaxValueBytes) + "\r\n" + value.substr(1) + "\r\n"), "STORED\r\n");
  EXPECT_EQ(T("append ok 0 0 1\r\nx\r\n"), "SERVER_ERROR object too large for cache\r\n");
  // A length beyond any buffer is still skipped, as it arrives.
  Session s;
  EXPECT_EQ(Talk(s, store, "set k 0 0 2147483645\r\n"), "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(Talk(s, store, std::string(1 << 20, 'x')), "");
  EXPECT_GT(s.InputSpace(), 0u);
}

TEST(MemcachedLimits, ConfigurableValueLimit) {
  Session::Options options;
  options.max_value_bytes = 4;
  LocalStore store(LocalStore::Options{4, 1 << 20});
  Session s(options);
  EXPECT_EQ(Talk(s, store, "set k 0 0 5\r\n12345\r\nset k 0 0 4\r\n1234\r\nappend k 0 0 1\r\n5\r\n"),
            "SERVER_ERROR object too large for cache\r\nSTORED\r\nSERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(Talk(s, store, "incr k 99999999\r\n"), "SERVER_ERROR object too large for cache\r\n");
}

TEST(MemcachedLimits, StoreFullIsOutOfMemory) {
  LocalStore store(LocalStore::Options{1 << 20, 10});
  Session s;
  EXPECT_EQ(Talk(s, store, "set k 0 0 5\r\n12345\r\nset j 0 0 5\r\n12345\r\n"),
            "STORED\r\nSERVER_ERROR out of memory storing object\r\n");
}

TEST(MemcachedLimits, LineTooLongCloses) {
  LocalStore store;
  Session s;
  EXPECT_EQ(Talk(s, store, "set " + std::string(2100, 'k')), "CLIENT_ERROR line too long\r\n");
  EXPECT_TRUE(s.closing());
  Session t;  // 2047 bytes and "\n" is still a line
  EXPECT_EQ(Talk(t, store, "get " + std::string(2043, 'k') + "\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_FALSE(t.closing());
}

// Large multigets: a get line may be longer than kMaxTextLineBytes (clients
// batch hundreds of keys); its keys are answered as they arrive.
std::string ManyKeys(int count, std::string_view prefix = "key") {
  std::string keys;
  for (int i = 0; i < count; ++i) keys += " " + std::string(prefix) + std::to_string(i);
  return keys;
}

TEST(MemcachedLongLines, LongMultiGetAnyChunking) {
  std::string sets;
  std::string expected;
  for (int i = 0; i < 600; i += 3) {
    std::string key = "longkeyname-" + std::to_string(i);
    sets += "set " + key + " 0 0 2\r\nv" + std::to_string(i % 10) + "\r\n";
    expected += "VALUE " + key + " 0 2\r\nv" + std::to_string(i % 10) + "\r\n";
  }
  std::string line = "get" + ManyKeys(600, "longkeyname-") + "\r\n";
  ASSERT_GT(line.size(), 4 * kMaxTextLineBytes);
  std::string stored;
  for (int i = 0; i < 200; ++i) stored += "STORED\r\n";
  for (size_t chunk : {line.size() + sets.size(), size_t{1}, size_t{7}, size_t{1000}, size_t{2047}, size_t{4096}}) {
    EXPECT_EQ(TalkChunked(sets + line + "version\r\n", {chunk}),
              stored + expected + "END\r\nVERSION " + kVersionString + "\r\n")
        << "chunk " << chunk;
  }
  // gets and gat too, and leading spaces.
  std::string gat = "  gats 100" + ManyKeys(400) + "\r\n";
  EXPECT_EQ(TalkChunked("set key399 0 0 1\r\nx\r\n" + gat, {100}).substr(8, 21), "VALUE key399 0 1 1\r\nx");
}

TEST(MemcachedLongLines, BadKeyInALongLine) {
  // Refused, the rest of the line skipped, the session goes on.
  std::string line = "get" + ManyKeys(300) + " " + std::string(300, 'k') + ManyKeys(300) + "\r\nversion\r\n";
  std::string reply = "CLIENT_ERROR bad command line format\r\nVERSION " + std::string(kVersionString) + "\r\n";
  for (size_t chunk : {line.size(), size_t{1}, size_t{13}, size_t{3000}}) {
    EXPECT_EQ(TalkChunked(line, {chunk}), reply) << chunk;
  }
  EXPECT_EQ(TalkChunked("get" + ManyKeys(300) + " a\x01b\r\nversion\r\n", {5000}), reply);
  EXPECT_EQ(TalkChunked("gat x" + ManyKeys(300) + "\r\nversion\r\n", {100}),
            "CLIENT_ERROR invalid exptime argument\r\nVERSION " + std::string(kVersionString) + "\r\n");
  // A key that never ends is refused once it is too long, not buffered.
  LocalStore store;
  Session s;
  EXPECT_EQ(Talk(s, store, "get" + ManyKeys(300) + " " + std::string(100000, 'k')),
            "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(Talk(s, store, std::string(100000, 'k') + "\r\nversion\r\n"),
            "VERSION " + std::string(kVersionString) + "\r\n");
  EXPECT_FALSE(s.closing());
}

TEST(MemcachedLimits, OutputIsBoundedWhenTheClientDoesNotRead) {
  LocalStore store;
  Session::Options options;
  options.output_limit = 64 << 10;
  Session s(options);
  std::string value(10000, 'v');
  s.Feed(("set k 0 0 10000\r\n" + value + "\r\n").data(), 10019);
  EXPECT_EQ(s.Run(store, kNow), Session::Step::kNeedInput);
  s.Consume(s.Output().size());
  std::string gets;
  for (int i = 0; i < 50; ++i) gets += "get k k k\r\n";
  size_t fed = 0, received = 0;
  // Each hit is "VALUE k 0 10000\r\n" (17 bytes), the value and "\r\n".
  constexpr size_t kExpected = 150 * (17 + 10000 + 2) + 50 * 5;
  for (int round = 0; round < 1000 && received < kExpected; ++round) {
    fed += s.Feed(gets.data() + fed, gets.size() - fed);
    Session::Step step = s.Run(store, kNow);
    EXPECT_LE(s.Output().size(), options.output_limit + 10100);
    if (step == Session::Step::kDrainOutput || fed == gets.size()) {
      received += s.Output().size();
      s.Consume(s.Output().size());
    }
  }
  EXPECT_EQ(received, kExpected);
}

TEST(MemcachedLimits, InputIsBounded) {
  Session s;
  std::string junk(4 << 20, 'x');
  size_t taken = s.Feed(junk.data(), junk.size());
  EXPECT_LT(taken, junk.size());
  EXPECT_EQ(s.InputSpace(), 0u);
}

TEST(MemcachedAsync, OneRequestAtATime) {
  LocalStore store;
  Session s;
  std::string in = "set k 0 0 1\r\na\r\nget k\r\n";
  s.Feed(in.data(), in.size());
  Request r;
  ASSERT_EQ(s.Next(kNow, &r), Session::Step::kRequest);
  EXPECT_EQ(r.op, Request::Op::kPut);
  EXPECT_EQ(r.key, "k");
  EXPECT_EQ(r.value, "a");
  Request other;
  EXPECT_EQ(s.Next(kNow, &other), Session::Step::kBusy);
  s.Complete(Execute(store, r));  // "later"
  EXPECT_EQ(s.Output(), "STORED\r\n");
  ASSERT_EQ(s.Next(kNow, &r), Session::Step::kRequest);
  EXPECT_EQ(r.op, Request::Op::kGet);
  Result miss;
  miss.status = Status::kNotFound;
  s.Complete(miss);
  EXPECT_EQ(s.Next(kNow, &r), Session::Step::kNeedInput);
  EXPECT_EQ(s.Output(), "STORED\r\nEND\r\n");
}

// ---- binary ----

std::string Bin(Opcode op, std::string_view key = {}, std::string_view extras = {}, std::string_view value = {},
                uint64_t cas = 0, uint32_t opaque = 0xdeadbeef) {
  std::string b;
  b.push_back(static_cast<char>(kRequestMagic));
  b.push_back(static_cast<char>(op));
  b.push_back(static_cast<char>(key.size() >> 8));
  b.push_back(static_cast<char>(key.size()));
  b.push_back(static_cast<char>(extras.size()));
  b.push_back(0);
  b.append(2, '\0');
  Append32(b, static_cast<uint32_t>(extras.size() + key.size() + value.size()));
  Append32(b, opaque);
  Append64(b, cas);
  return b.append(extras).append(key).append(value);
}
std::string Ext32(uint32_t v) {
  std::string s;
  Append32(s, v);
  return s;
}
std::string SetExtras(uint32_t flags, uint32_t exptime) { return Ext32(flags) + Ext32(exptime); }
std::string ArithExtras(uint64_t delta, uint64_t initial, uint32_t exptime) {
  std::string s;
  Append64(s, delta);
  Append64(s, initial);
  Append32(s, exptime);
  return s;
}

struct Resp {
  uint8_t opcode;
  uint16_t status;
  std::string extras, key, value;
  uint64_t cas;
  uint32_t opaque;
};
std::vector<Resp> Parse(std::string_view out) {
  std::vector<Resp> all;
  while (out.size() >= kHeaderBytes) {
    auto* p = reinterpret_cast<const uint8_t*>(out.data());
    BinaryHeader h = DecodeHeader(p);
    EXPECT_EQ(h.magic, kResponseMagic);
    EXPECT_EQ(h.data_type, 0);
    EXPECT_LE(kHeaderBytes + h.body_length, out.size());
    std::string_view body = out.substr(kHeaderBytes, h.body_length);
    Resp r{h.opcode,
           h.vbucket_or_status,
           std::string(body.substr(0, h.extras_length)),
           std::string(body.substr(h.extras_length, h.key_length)),
           std::string(body.substr(h.extras_length + h.key_length)),
           h.cas,
           h.opaque};
    all.push_back(r);
    out.remove_prefix(kHeaderBytes + h.body_length);
  }
  EXPECT_TRUE(out.empty());
  return all;
}

struct MemcachedBinary : Fixture {
  std::vector<Resp> B(std::string_view in, Time now = kNow) { return Parse(T(in, now)); }
  Resp One(std::string_view in, Time now = kNow) {
    auto r = B(in, now);
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? Resp{} : r[0];
  }
};

TEST_F(MemcachedBinary, SetGetFamily) {
  Resp set = One(Bin(Opcode::kSet, "k", SetExtras(0x01020304, 0), "val"));
  EXPECT_EQ(set.status, 0);
  EXPECT_NE(set.cas, 0u);
  EXPECT_EQ(set.opaque, 0xdeadbeefu);
  EXPECT_TRUE(set.extras.empty() && set.key.empty() && set.value.empty());
  EXPECT_EQ(session.protocol(), Session::Protocol::kBinary);
  Resp get = One(Bin(Opcode::kGet, "k"));
  EXPECT_EQ(get.status, 0);
  EXPECT_EQ(get.extras, Ext32(0x01020304));
  EXPECT_EQ(get.key, "");
  EXPECT_EQ(get.value, "val");
  EXPECT_EQ(get.cas, set.cas);
  Resp getk = One(Bin(Opcode::kGetK, "k"));
  EXPECT_EQ(getk.key, "k");
  EXPECT_EQ(getk.value, "val");
  Resp miss = One(Bin(Opcode::kGet, "nope"));
  EXPECT_EQ(miss.status, 0x01);
  EXPECT_EQ(miss.value, "Not found");
  EXPECT_EQ(miss.cas, 0u);
  EXPECT_EQ(One(Bin(Opcode::kGetK, "nope")).key, "nope");
  // Quiet gets: hits only; Noop answers after them.
  auto r = B(Bin(Opcode::kGetQ, "nope") + Bin(Opcode::kGetKQ, "nope") + Bin(Opcode::kGetQ, "k") +
             Bin(Opcode::kGetKQ, "k") + Bin(Opcode::kNoop));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].opcode, static_cast<uint8_t>(Opcode::kGetQ));
  EXPECT_EQ(r[0].key, "");
  EXPECT_EQ(r[1].opcode, static_cast<uint8_t>(Opcode::kGetKQ));
  EXPECT_EQ(r[1].key, "k");
  EXPECT_EQ(r[2].opcode, static_cast<uint8_t>(Opcode::kNoop));
}

TEST_F(MemcachedBinary, StorageStatusesAndCas) {
  EXPECT_EQ(One(Bin(Opcode::kAdd, "k", SetExtras(0, 0), "a")).status, 0);
  EXPECT_EQ(One(Bin(Opcode::kAdd, "k", SetExtras(0, 0), "a")).status, 0x02);
  EXPECT_EQ(One(Bin(Opcode::kReplace, "x", SetExtras(0, 0), "a")).status, 0x01);
  Resp rep = One(Bin(Opcode::kReplace, "k", SetExtras(0, 0), "b"));
  EXPECT_EQ(rep.status, 0);
  EXPECT_EQ(One(Bin(Opcode::kSet, "k", SetExtras(0, 0), "c", rep.cas + 1)).status, 0x02);
  EXPECT_EQ(One(Bin(Opcode::kSet, "zz", SetExtras(0, 0), "c", 5)).status, 0x01);
  Resp set = One(Bin(Opcode::kSet, "k", SetExtras(0, 0), "c", rep.cas));
  EXPECT_EQ(set.status, 0);
  EXPECT_EQ(One(Bin(Opcode::kReplace, "k", SetExtras(0, 0), "d", rep.cas)).status, 0x02);
  EXPECT_EQ(One(Bin(Opcode::kAppend, "k", {}, "e")).status, 0);
  EXPECT_EQ(One(Bin(Opcode::kPrepend, "k", {}, "f")).status, 0);
  EXPECT_EQ(One(Bin(Opcode::kAppend, "x", {}, "e")).status, 0x05);
  EXPECT_EQ(One(Bin(Opcode::kPrepend, "x", {}, "e")).status, 0x05);
  EXPECT_EQ(One(Bin(Opcode::kGet, "k")).value, "fce");
  // Quiet storage: silent on success, errors still answered (with the quiet opcode).
  auto r = B(Bin(Opcode::kSetQ, "q", SetExtras(0, 0), "1") + Bin(Opcode::kAddQ, "q", SetExtras(0, 0), "1") +
             Bin(Opcode::kAddQ, "q2", SetExtras(0, 0), "1") + Bin(Opcode::kReplaceQ, "q", SetExtras(0, 0), "2") +
             Bin(Opcode::kReplaceQ, "none", SetExtras(0, 0), "2") + Bin(Opcode::kAppendQ, "q", {}, "3") +
             Bin(Opcode::kPrependQ, "q", {}, "0") + Bin(Opcode::kAppendQ, "none", {}, "3") + Bin(Opcode::kNoop));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].opcode, static_cast<uint8_t>(Opcode::kAddQ));
  EXPECT_EQ(r[0].status, 0x02);
  EXPECT_EQ(r[1].opcode, static_cast<uint8_t>(Opcode::kReplaceQ));
  EXPECT_EQ(r[1].status, 0x01);
  EXPECT_EQ(r[2].status, 0x05);
  EXPECT_EQ(r[3].opcode, static_cast<uint8_t>(Opcode::kNoop));
  EXPECT_EQ(One(Bin(Opcode::kGet, "q")).value, "023");
}

TEST_F(MemcachedBinary, DeleteIncrDecr) {
  EXPECT_EQ(One(Bin(Opcode::kDelete, "k")).status, 0x01);
  Resp set = One(Bin(Opcode::kSet, "k", SetExtras(0, 0), "a"));
  EXPECT_EQ(One(Bin(Opcode::kDelete, "k", {}, {}, set.cas + 1)).status, 0x02);
  Resp del = One(Bin(Opcode::kDelete, "k", {}, {}, set.cas));
  EXPECT_EQ(del.status, 0);
  EXPECT_EQ(del.cas, 0u);
  EXPECT_TRUE(B(Bin(Opcode::kSet, "k", SetExtras(0, 0), "a") + Bin(Opcode::kDeleteQ, "k")).size() == 1);
  EXPECT_EQ(One(Bin(Opcode::kDeleteQ, "k")).status, 0x01);

  EXPECT_EQ(One(Bin(Opcode::kIncrement, "n", ArithExtras(1, 0, 0xffffffff))).status, 0x01);  // don't create
  Resp first = One(Bin(Opcode::kIncrement, "n", ArithExtras(1, 7, 0)));
  EXPECT_EQ(first.status, 0);
  EXPECT_EQ(Load64(reinterpret_cast<const uint8_t*>(first.value.data())), 7u);  // created with the initial value
  EXPECT_NE(first.cas, 0u);
  Resp second = One(Bin(Opcode::kIncrement, "n", ArithExtras(5, 7, 0)));
  EXPECT_EQ(Load64(reinterpret_cast<const uint8_t*>(second.value.data())), 12u);
  Resp dec = One(Bin(Opcode::kDecrement, "n", ArithExtras(100, 0, 0)));
  EXPECT_EQ(Load64(reinterpret_cast<const uint8_t*>(dec.value.data())), 0u);
  EXPECT_EQ(One(Bin(Opcode::kIncrement, "n", ArithExtras(1, 0, 0), {}, dec.cas + 9)).status, 0x02);
  One(Bin(Opcode::kSet, "s", SetExtras(0, 0), "abc"));
  EXPECT_EQ(One(Bin(Opcode::kIncrement, "s", ArithExtras(1, 0, 0))).status, 0x06);
  EXPECT_EQ(B(Bin(Opcode::kIncrementQ, "n", ArithExtras(2, 0, 0)) + Bin(Opcode::kDecrementQ, "n", ArithExtras(1, 0, 0)))
                .size(),
            0u);
  EXPECT_EQ(One(Bin(Opcode::kGet, "n")).value, "1");
  EXPECT_EQ(One(Bin(Opcode::kDecrementQ, "s", ArithExtras(1, 0, 0))).status, 0x06);
  // Created with an expiry.
  One(Bin(Opcode::kIncrement, "e", ArithExtras(1, 3, 10)));
  EXPECT_EQ(One(Bin(Opcode::kGet, "e"), kNow + 10).status, 0x01);
}

TEST_F(MemcachedBinary, TouchAndGat) {
  One(Bin(Opcode::kSet, "k", SetExtras(9, 10), "v"));
  Resp touch = One(Bin(Opcode::kTouch, "k", Ext32(100)));
  EXPECT_EQ(touch.status, 0);
  EXPECT_EQ(touch.extras, Ext32(9));
  EXPECT_TRUE(touch.value.empty());
  EXPECT_EQ(One(Bin(Opcode::kTouch, "x", Ext32(100))).status, 0x01);
  EXPECT_EQ(One(Bin(Opcode::kGet, "k"), kNow + 50).value, "v");
  Resp gat = One(Bin(Opcode::kGat, "k", Ext32(200)), kNow + 50);
  EXPECT_EQ(gat.value, "v");
  EXPECT_EQ(gat.key, "");
  EXPECT_EQ(One(Bin(Opcode::kGatK, "k", Ext32(200))).key, "k");
  auto r = B(Bin(Opcode::kGatQ, "x", Ext32(0)) + Bin(Opcode::kGatKQ, "x", Ext32(0)) +
             Bin(Opcode::kGatKQ, "k", Ext32(0)) + Bin(Opcode::kNoop));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].key, "k");
  EXPECT_EQ(One(Bin(Opcode::kGet, "k"), kNow + 100000).value, "v");  // gat 0: never expires
  EXPECT_EQ(One(Bin(Opcode::kGatQ, "k", Ext32(0))).value, "v");
}

TEST_F(MemcachedBinary, FlushNoopVersionStatQuit) {
  One(Bin(Opcode::kSet, "k", SetExtras(0, 0), "v"));
  EXPECT_EQ(One(Bin(Opcode::kFlush)).status, 0);
  EXPECT_EQ(One(Bin(Opcode::kGet, "k")).status, 0x01);
  One(Bin(Opcode::kSet, "k", SetExtras(0, 0), "v"));
  EXPECT_EQ(B(Bin(Opcode::kFlushQ, {}, Ext32(10))).size(), 0u);
  EXPECT_EQ(One(Bin(Opcode::kGet, "k"), kNow + 9).status, 0);
  EXPECT_EQ(One(Bin(Opcode::kGet, "k"), kNow + 10).status, 0x01);
  EXPECT_EQ(One(Bin(Opcode::kVersion)).value, kVersionString);
  EXPECT_EQ(One(Bin(Opcode::kNoop)).status, 0);
  auto stats = B(Bin(Opcode::kStat));
  ASSERT_GT(stats.size(), 10u);
  EXPECT_EQ(stats[0].key, "uptime");
  EXPECT_TRUE(stats.back().key.empty() && stats.back().value.empty());
  for (const Resp& s : stats) EXPECT_EQ(s.cas, 0u);
  EXPECT_EQ(One(Bin(Opcode::kStat, "settings")).key, "");
  EXPECT_EQ(One(Bin(Opcode::kStat, "bogus")).status, 0x01);
  EXPECT_EQ(One(Bin(Opcode::kStat, "reset")).status, 0);
  EXPECT_EQ(One(Bin(Opcode::kQuit) + Bin(Opcode::kNoop)).opcode, static_cast<uint8_t>(Opcode::kQuit));
  EXPECT_TRUE(session.closing());
  Session quiet;
  EXPECT_EQ(Talk(quiet, store, Bin(Opcode::kQuitQ)), "");
  EXPECT_TRUE(quiet.closing());
}

TEST_F(MemcachedBinary, Errors) {
  Resp unknown = One(Bin(static_cast<Opcode>(0x55), "k", {}, "xyz"));
  EXPECT_EQ(unknown.status, 0x81);
  EXPECT_EQ(unknown.opcode, 0x55);
  EXPECT_EQ(One(Bin(Opcode::kGet, "k", Ext32(1))).status, 0x04);    // extras on a get
  EXPECT_EQ(One(Bin(Opcode::kGet)).status, 0x04);                   // no key
  EXPECT_EQ(One(Bin(Opcode::kSet, "k", "abc", "v")).status, 0x04);  // bad extras
  EXPECT_EQ(One(Bin(Opcode::kNoop, "k")).status, 0x04);
  EXPECT_EQ(One(Bin(Opcode::kGet, std::string(251, 'k'))).status, 0x04);
  EXPECT_EQ(One(Bin(Opcode::kGet, "a b")).status, 0x04);
  std::string typed = Bin(Opcode::kGet, "k");
  typed[5] = 1;
  EXPECT_EQ(One(typed).status, 0x04);
  EXPECT_EQ(One(Bin(Opcode::kGetQ, "k", Ext32(1))).status, 0x04);  // quiet: errors are answered
  EXPECT_FALSE(session.closing());
  // Too large: answered, skipped, stream in step; the old value is gone.
  One(Bin(Opcode::kSet, "big", SetExtras(0, 0), "old"));
  std::string value(kDefaultMaxValueBytes + 1, 'v');
  auto r = B(Bin(Opcode::kSetQ, "big", SetExtras(0, 0), value) + Bin(Opcode::kGet, "big"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, 0x03);
  EXPECT_EQ(r[0].opcode, static_cast<uint8_t>(Opcode::kSetQ));
  EXPECT_EQ(r[1].status, 0x01);
  EXPECT_FALSE(session.closing());
}

TEST_F(MemcachedBinary, Verbosity) {
  EXPECT_EQ(One(Bin(Opcode::kVerbosity, {}, Ext32(1))).status, 0);
  EXPECT_EQ(One(Bin(Opcode::kVerbosity)).status, 0x04);
}

TEST(MemcachedBinaryLimits, IncrPastTheValueLimit) {
  Session::Options options;
  options.max_value_bytes = 4;
  LocalStore store(LocalStore::Options{4, 1 << 20});
  Session s(options);
  auto r = Parse(Talk(
      s, store,
      Bin(Opcode::kSet, "k", SetExtras(0, 0), "1234") + Bin(Opcode::kIncrement, "k", ArithExtras(99999999, 0, 0))));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].status, 0x03);
}

TEST(MemcachedBinaryStream, FatalErrorsClose) {
  LocalStore store;
  {
    Session s;  // bad magic after a good request
    std::string in = Bin(Opcode::kNoop) + std::string(24, '\x81');
    EXPECT_EQ(Parse(Talk(s, store, in)).size(), 1u);
    EXPECT_TRUE(s.closing());
  }
  {
    Session s;  // key longer than the body
    std::string in = Bin(Opcode::kGet, "k");
    in[3] = 9;
    auto r = Parse(Talk(s, store, in));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, 0x04);
    EXPECT_TRUE(s.closing());
  }
  {
    Session s;  // a get with a 1 GiB body
    std::string in = Bin(Opcode::kGet, "k");
    in[8] = 0x40;
    auto r = Parse(Talk(s, store, in));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, 0x04);
    EXPECT_TRUE(s.closing());
  }
}

// ---- split input ----

std::string TextConversation() {
  std::string value(3000, 'z');
  return "set a 1 0 3\r\nabc\r\nget a b\r\nadd a 0 0 1 noreply\r\nx\r\nappend a 0 0 3\r\ndef\r\n"
         "set n 0 0 2\r\n41\r\nincr n 1\r\ndecr n 50\r\ntouch a 100\r\ngat 0 a n\r\nbogus\r\n"
         "set big 0 0 3000\r\n" +
         value + "\r\nget big\r\ndelete a\r\ndelete a\r\nset bad 0 0 2\r\nxyz\r\nversion\r\nflush_all\r\nget n\r\n";
}

std::string BinaryConversation() {
  return Bin(Opcode::kSet, "a", SetExtras(1, 0), "abc") + Bin(Opcode::kGetK, "a") + Bin(Opcode::kGetQ, "b") +
         Bin(Opcode::kAddQ, "a", SetExtras(0, 0), "x") + Bin(Opcode::kAppend, "a", {}, "def") +
         Bin(Opcode::kIncrement, "n", ArithExtras(1, 41, 0)) + Bin(Opcode::kDecrement, "n", ArithExtras(50, 0, 0)) +
         Bin(Opcode::kTouch, "a", Ext32(100)) + Bin(Opcode::kGatK, "a", Ext32(0)) +
         Bin(static_cast<Opcode>(0x77), "zz", {}, "body") +
         Bin(Opcode::kSet, "big", SetExtras(0, 0), std::string(3000, 'z')) + Bin(Opcode::kGet, "big") +
         Bin(Opcode::kDelete, "a") + Bin(Opcode::kDeleteQ, "a") + Bin(Opcode::kVersion) + Bin(Opcode::kFlushQ) +
         Bin(Opcode::kGetKQ, "n") + Bin(Opcode::kNoop) + Bin(Opcode::kQuit);
}

TEST(MemcachedSplit, EveryByteBoundaryAndRandomChunks) {
  for (const std::string& conversation : {TextConversation(), BinaryConversation()}) {
    std::string whole = TalkChunked(conversation, {conversation.size()});
    ASSERT_FALSE(whole.empty());
    EXPECT_EQ(TalkChunked(conversation, {1}), whole);
    for (size_t cut = 1; cut < conversation.size(); cut += 1) {
      ASSERT_EQ(TalkChunked(conversation, {cut, conversation.size()}), whole) << "cut at " << cut;
    }
    std::mt19937 rng(42);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<size_t> sizes;
      for (int i = 0; i < 16; ++i) sizes.push_back(1 + rng() % 64);
      ASSERT_EQ(TalkChunked(conversation, sizes), whole) << "trial " << trial;
    }
  }
}

TEST(MemcachedSplit, SmallOutputLimitChangesNothing) {
  Session::Options tight;
  tight.output_limit = 1;
  for (const std::string& conversation : {TextConversation(), BinaryConversation()}) {
    EXPECT_EQ(TalkChunked(conversation, {7}, tight), TalkChunked(conversation, {conversation.size()}));
  }
}

// A server on several cores: each core's sessions count into its own
// counters while another core asks for stats; stats add them up, stats
// reset zeroes all of them (whichever core asks), connections stay.
TEST(MemcachedCoreCounters, SumAcrossCoresAndReset) {
  constexpr int kCores = 3;
  constexpr int kGets = 2000;
  CoreCounters all(kCores, kNow);
  LocalStore stores[kCores];
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int core = 0; core < kCores; ++core) {
    threads.emplace_back([&, core] {
      Session::Options options;
      options.counters = all.Of(core);
      options.all_cores = &all;
      Session s(options);
      while (!go.load()) {
      }
      Talk(s, stores[core], "set k 0 0 1\r\nv\r\n");
      for (int i = 0; i < kGets; ++i) Talk(s, stores[core], i % 2 ? "get k\r\n" : "get nope\r\n");
    });
  }
  Session::Options options;
  options.counters = all.Of(0);
  options.all_cores = &all;
  Session asker(options);  // a fourth connection, on core 0
  LocalStore store;
  go = true;
  for (int i = 0; i < 50; ++i) {  // stats while the cores count
    std::string stats = Talk(asker, store, "stats\r\n");
    EXPECT_NE(stats.find("STAT threads 3\r\n"), std::string::npos);
  }
  for (auto& t : threads) t.join();
  Counters total = all.Total();
  EXPECT_EQ(total.cmd_get, uint64_t(kCores * kGets));
  EXPECT_EQ(total.get_hits, uint64_t(kCores * kGets / 2));
  EXPECT_EQ(total.cmd_set, uint64_t(kCores));
  EXPECT_EQ(total.total_connections, uint64_t(kCores + 1));
  EXPECT_EQ(total.curr_connections, 1u);  // the threads' sessions ended
  std::string stats = Talk(asker, store, "stats\r\n");
  EXPECT_NE(stats.find("STAT cmd_get " + std::to_string(kCores * kGets) + "\r\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("STAT fox_core_connections 2,1,1\r\n"), std::string::npos) << stats;
  EXPECT_EQ(Talk(asker, store, "stats reset\r\n"), "RESET\r\n");
  total = all.Total();
  EXPECT_EQ(total.cmd_get, 0u);
  EXPECT_EQ(total.get_hits, 0u);
  EXPECT_EQ(total.total_connections, uint64_t(kCores + 1));
  // Counting goes on from the new zero, on any core.
  Session::Options on_two;
  on_two.counters = all.Of(2);
  on_two.all_cores = &all;
  Session later(on_two);
  Talk(later, stores[2], "get k\r\nget k\r\n");
  total = all.Total();
  EXPECT_EQ(total.cmd_get, 2u);
  EXPECT_EQ(total.get_hits, 2u);
  EXPECT_EQ(total.curr_connections, 2u);
}

}  // namespace
}  // namespace fox::memcached
