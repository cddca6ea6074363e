// Single-address-space segments.
#include <cstring>
#include <string>

#include "fox/core.h"
#include "fox/event.h"
#include "fox/future.h"
#include "fox/sas.h"
#include "vmtest.h"

namespace vmtest {

int Sas(int, char**) {
  using fox::sas::Access;
  // The address depends on the name only (the same on every node).
  uintptr_t expected = fox::sas::AddressFor("fox.test.table");
  CHECK(expected >= fox::sas::kBase && (expected - fox::sas::kBase) % fox::sas::kSlotSize == 0);
  auto seg = fox::sas::Create("fox.test.table", 3 << 20, Access::kReadWrite);
  CHECK(seg.ok());
  CHECK(seg->base == expected && seg->size == (4u << 20));  // rounded to 2 MiB
  auto* words = reinterpret_cast<uint64_t*>(seg->base);
  for (size_t i = 0; i < seg->size / 8; ++i) CHECK(words[i] == 0);  // zeroed
  // Written on one core, read on another: one address space.
  int other = fox::core::Online() - 1;
  fox::Promise<void> p;
  auto f = p.GetFuture();
  auto shared = std::make_shared<fox::Promise<void>>(std::move(p));
  fox::event::SpawnRemote(other, [words, shared] {
    for (size_t i = 0; i < 1000; ++i) words[i] = i * 3;
    shared->SetValue();
  });
  f.Block();
  for (size_t i = 0; i < 1000; ++i) CHECK(words[i] == i * 3);
  // Errors.
  CHECK(fox::sas::Create("fox.test.table", 1 << 20, Access::kReadWrite).error() == fox::Error::kAlreadyExists);
  CHECK(fox::sas::Create("", 1 << 20, Access::kReadWrite).error() == fox::Error::kInvalidArgument);
  CHECK(fox::sas::Create("too.big", fox::sas::kSlotSize + 1, Access::kReadWrite).error() == fox::Error::kOutOfRange);
  CHECK(fox::sas::Find("no.such.segment").error() == fox::Error::kNotFound);
  // Two names hashing to the same slot cannot coexist.
  std::string a = "fox.test.table", b;
  for (int i = 0; b.empty(); ++i) {
    std::string candidate = "collide-" + std::to_string(i);
    if (fox::sas::AddressFor(candidate) == expected) b = candidate;
  }
  CHECK(fox::sas::Create(b, 1 << 20, Access::kReadWrite).error() == fox::Error::kAlreadyExists);
  // A large segment uses large pages and is fully usable.
  auto big = fox::sas::Create("fox.test.big", size_t(1) << 30, Access::kReadWrite);
  CHECK(big.ok());
  auto* bytes = reinterpret_cast<uint8_t*>(big->base);
  bytes[0] = 1;
  bytes[big->size - 1] = 2;
  CHECK(bytes[0] + bytes[big->size - 1] == 3);
  CHECK(fox::sas::Destroy("fox.test.big").ok());
  CHECK(fox::sas::Find("fox.test.big").error() == fox::Error::kNotFound);
  // Read-only: readable everywhere.
  CHECK(fox::sas::SetAccess("fox.test.table", Access::kReadOnly).ok());
  CHECK(fox::sas::Find("fox.test.table")->access == Access::kReadOnly);
  CHECK(words[999] == 999 * 3);
  std::printf("sas: segment at %#lx, collision with '%s' refused\n", (unsigned long)seg->base, b.c_str());
  return 0;
}

// Writes to a read-only segment from an application core: must panic and
// name the segment.
int SasReadOnlyWrite(int, char**) {
  auto seg = fox::sas::Create("fox.test.frozen", 2 << 20, fox::sas::Access::kReadWrite);
  CHECK(seg.ok());
  auto* words = reinterpret_cast<volatile uint64_t*>(seg->base);
  words[7] = 7;
  CHECK(fox::sas::SetAccess("fox.test.frozen", fox::sas::Access::kReadOnly).ok());
  int app = fox::core::Online() - 1;
  fox::event::SpawnRemote(app, [words] { words[8] = 8; });
  fox::Promise<void> never;
  auto f = never.GetFuture();
  auto keep = std::make_shared<fox::Promise<void>>(std::move(never));
  f.Block();
  return 1;
}

}  // namespace vmtest
