/* Boots a machine in SimGrid the way bootfabric's flow simulator does, for comparison.
 *
 * Usage: boot PLATFORM.xml BOOT.txt [--cfg=...]
 *
 * BOOT.txt (written by fabricsim's tests):
 *     health SECONDS
 *     files SIZE_BYTES...
 *     node NAME SERVER START_SECONDS CAP_BYTES_PER_SECOND...   (one line per node; cap -1: none)
 *
 * Every node fetches its files in order from its server, one comm (SimGrid's flow model) per
 * file, from START on (its power-on plus DHCP); a file's protocol cap (TFTP lock-step or a TCP
 * window per round trip) is the comm's rate bound. A node is done HEALTH seconds after its last
 * file. Prints "NAME DONE" per node on stdout and the wall and CPU times on stderr.
 *
 * SimGrid runs its max-min model with the TCP corrections off: CM02 (no bandwidth factor, no
 * weight-S), latency factor 0 (no latency phase: the flow simulator has latencies only in the
 * protocol caps), no cross-traffic, and a TCP-gamma window so large that its bound W/RTT never
 * holds (TCP-gamma 0, which should mean "no window bound", makes SimGrid 3.32 ignore the comms'
 * rate bounds too). */
#include <simgrid/s4u.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

struct Node {
  std::string name, server;
  double start;
  std::vector<double> caps;
  double done = -1;
};

int main(int argc, char** argv)
{
  std::vector<std::string> cfg = {"--cfg=network/model:CM02",     "--cfg=network/latency-factor:0",
                                  "--cfg=network/bandwidth-factor:1", "--cfg=network/weight-S:0",
                                  "--cfg=network/TCP-gamma:1e30",     "--cfg=network/crosstraffic:0",
                                  "--cfg=maxmin/precision:1e-9",   "--cfg=contexts/stack-size:32",
                                  "--cfg=contexts/guard-size:0",
                                  "--log=root.thres:critical"};
  std::vector<char*> args = {argv[0]};
  for (auto& c : cfg)
    args.push_back(c.data());
  for (int i = 1; i < argc; i++)
    args.push_back(argv[i]);
  int n = static_cast<int>(args.size());
  sg4::Engine e(&n, args.data());
  if (n != 3) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml BOOT.txt\n", argv[0]);
    return 2;
  }
  double health = 0;
  std::vector<double> sizes;
  std::vector<Node> nodes;
  std::ifstream in(args[2]);
  for (std::string line; std::getline(in, line);) {
    std::istringstream w(line);
    std::string kind;
    w >> kind;
    if (kind == "health") {
      w >> health;
    } else if (kind == "files") {
      for (double s; w >> s;)
        sizes.push_back(s);
    } else if (kind == "node") {
      Node nd;
      w >> nd.name >> nd.server >> nd.start;
      for (double c; w >> c;)
        nd.caps.push_back(c);
      nodes.push_back(nd);
    }
  }
  auto t0       = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  e.load_platform(args[1]);
  auto t1       = std::chrono::steady_clock::now();
  std::clock_t c1 = std::clock();
  static int token;
  for (auto& nd : nodes) {
    Node* p          = &nd;
    sg4::Mailbox* mb = sg4::Mailbox::by_name(nd.name);
    // The server's side sends the files, each bounded by its cap; the node's side receives them.
    sg4::Actor::create(nd.name + "@" + nd.server, e.host_by_name(nd.server), [p, mb, &sizes]() {
      sg4::this_actor::sleep_until(p->start);
      for (size_t k = 0; k < sizes.size(); k++) {
        if (sizes[k] <= 0)
          continue;
        sg4::CommPtr c = mb->put_init(&token, static_cast<uint64_t>(sizes[k]));
        if (p->caps[k] > 0)
          c->set_rate(p->caps[k]);
        c->wait();
      }
    });
    sg4::Actor::create(nd.name, e.host_by_name(nd.name), [p, mb, &sizes, health]() {
      sg4::this_actor::sleep_until(p->start);
      for (size_t k = 0; k < sizes.size(); k++)
        if (sizes[k] > 0)
          mb->get<int>();
      p->done = sg4::Engine::get_clock() + health;
    });
  }
  e.run();
  auto t2       = std::chrono::steady_clock::now();
  std::clock_t c2 = std::clock();
  for (auto const& nd : nodes)
    std::printf("%s %.17g\n", nd.name.c_str(), nd.done);
  // Wall and CPU seconds of loading the platform and of the simulation (actors included).
  std::fprintf(stderr, "load %.6f run %.6f cpu %.6f %.6f\n", std::chrono::duration<double>(t1 - t0).count(),
               std::chrono::duration<double>(t2 - t1).count(), double(c1 - c0) / CLOCKS_PER_SEC,
               double(c2 - c1) / CLOCKS_PER_SEC);
  return 0;
}
