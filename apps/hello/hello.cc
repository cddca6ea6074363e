// The smallest fox application: greets from the compute node and exits.
#include <cstdio>

int main(int argc, char** argv) {
  std::printf("Hello from fox on %s", argc > 1 ? "" : "a compute node");
  for (int i = 1; i < argc; ++i) std::printf("%s%s", i > 1 ? " " : "", argv[i]);
  std::printf("!\n");
  return 0;
}
