// The image's own symbol table, for backtraces. The build links the image
// twice: the first link's function symbols (demangled) are written by
// boot/gen_symtab.py into the .fox_symtab section of the second link, which
// sits after all code so that no function moves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::symbols {

// Finds the function containing `addr`. Returns its name (NUL-terminated,
// inside the image) and sets *offset, or returns nullptr. Safe anywhere.
const char* Lookup(uint64_t addr, uint64_t* offset);

// Number of symbols in the table (0 in a first-pass link).
size_t Count();

}  // namespace fox::symbols
