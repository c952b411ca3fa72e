// libsystemc defines main() and expects sc_main. tpusim's programs have their own main()
// and drive SystemC through Simulation::Run, so this entry point is never reached;
// it exists only to satisfy the link.
#include <cstdio>

extern "C" int sc_main(int, char*[]) {
  std::fputs("tpusim: sc_main is not an entry point; use the tpusim command\n", stderr);
  return 2;
}
