#include "exit_device.h"

#include "acpi.h"
#include "cpu.h"
#include "serial.h"

namespace fox::exit_device {

[[noreturn]] void PowerOff(int status) {
  x86::DisableInterrupts();
  serial::Flush();  // the banner's core may still hold the console (main can end first)
  x86::Outl(0xF4, uint32_t(status & 0x7F));
  acpi::PowerOff();
  x86::HaltForever();
}

}  // namespace fox::exit_device
