// The three ids a message is addressed by do not mix (fox/net/ids.h): the
// checks are at compile time; a build where an id became an integer again
// fails here.
#include "fox/net/ids.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

#include "fox/net/am.h"

namespace fox {
namespace {

enum Handlers : uint16_t { kGet = 1, kPut = 2 };
enum class Scoped : uint16_t { kOne = 1 };

// An integer is none of the ids; the ids are not each other nor integers.
static_assert(!std::is_convertible_v<uint32_t, EbbId> && !std::is_convertible_v<int, EbbId>);
static_assert(!std::is_convertible_v<uint16_t, HandlerId> && !std::is_convertible_v<int, HandlerId>);
static_assert(!std::is_convertible_v<EbbId, HandlerId> && !std::is_convertible_v<HandlerId, EbbId>);
static_assert(!std::is_convertible_v<EbbId, NodeId> && !std::is_convertible_v<HandlerId, NodeId>);
static_assert(!std::is_convertible_v<Scoped, HandlerId>);
// An Ebb's own enumeration of its handlers is what a HandlerId is made of.
static_assert(std::is_convertible_v<Handlers, HandlerId>);
static_assert(HandlerId(kPut) == HandlerId{2} && Raw(HandlerId(kGet)) == 1);

// Send(node, ebb, handler, ...) with any two addresses swapped does not compile.
using SendFn = decltype(&am::Send);
static_assert(std::is_invocable_v<SendFn, NodeId, EbbId, HandlerId, const void*, size_t>);
static_assert(!std::is_invocable_v<SendFn, EbbId, NodeId, HandlerId, const void*, size_t>);
static_assert(!std::is_invocable_v<SendFn, NodeId, HandlerId, EbbId, const void*, size_t>);
static_assert(!std::is_invocable_v<SendFn, HandlerId, EbbId, NodeId, const void*, size_t>);
static_assert(!std::is_invocable_v<SendFn, NodeId, uint32_t, HandlerId, const void*, size_t>);
static_assert(!std::is_invocable_v<SendFn, NodeId, EbbId, uint16_t, const void*, size_t>);

TEST(Ids, RangesOfEbbIdsAreIds) {
  constexpr EbbId first{100};
  EXPECT_EQ(first + 5, EbbId{105});
  EXPECT_EQ(EbbId{105} - first, 5u);
  EXPECT_EQ(EbbId{105} - 5, first);
  EXPECT_LT(first, first + 1);
  EXPECT_EQ(Raw(first), 100u);
}

TEST(Ids, HandlerIdsCompareByNumber) {
  EXPECT_EQ(HandlerId(kGet), HandlerId{1});
  EXPECT_NE(HandlerId(kGet), HandlerId(kPut));
  EXPECT_LT(HandlerId(kGet), HandlerId(kPut));
  EXPECT_EQ(Raw(HandlerId{}), 0);
}

}  // namespace
}  // namespace fox
