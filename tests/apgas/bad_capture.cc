// Must not compile (tests/apgas/tests.cmake, apgas.capture_not_serializable):
// a closure sent to another place captures a std::string by value, which is
// neither trivially copyable nor something cereal can write as a capture.
#include <string>

#include "fox/apgas/apgas.h"

void SendsAString(fox::apgas::Place p) {
  std::string name = "not copyable byte for byte";
  fox::apgas::asyncAt(p, [name] { (void)name.size(); });
}
