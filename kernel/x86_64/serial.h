#pragma once

namespace fox::serial {
// Programs COM1. Boot step 1: nothing may be logged before it.
void Init();

// Until Release, console output from cores other than `core` is kept back
// (4 KiB of it; a writer beyond that waits, up to 1 s) and written out by
// Release, in order: the boot banner, which another core prints while the
// boot core starts main, comes out before anything main prints, and main
// does not wait for it. A panic releases it. A hold taken while another
// is held first waits (up to 1 s) for that one to end and writes out what
// it kept: the earlier holder's Release must not end the later hold.
void HoldFor(int core);
void Release();
// Before the machine powers off: waits (up to 1 s) for a hold to end and
// writes out what it kept back.
void Flush();
}  // namespace fox::serial
