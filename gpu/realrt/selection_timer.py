"""Add the selection timer to a PluginInterface.cpp (measurement only).

Never part of the series. Times what ``GenericDeviceTy::loadBinary`` spends
on an OffloadBinary container before it loads an entry: from the
container's arrival to the first entry handed to the load (reading the
entries; asking the plugin about them; the rank and the sort where there
are), and the reading alone within it. std::chrono::steady_clock,
nanoseconds per call, kept in memory and written at exit to the file
``$KDL_SELECTION_TIMER`` names, one line per call: ``ENTRIES TOTAL_NS
PARSE_NS``.

The three loops it is put into differ (#186088's stand-in, release-22.x
0012; the series as v9 had it, which asked the plugin about every entry
before ranking; the series now, which ranks first and asks in rank order),
so the timer is placed at anchors they share, not by a patch:

- start: where the container is recognized (``loadBinary``'s test of the
  magic; in the series now, the top of ``loadOffloadBinaryEntry``);
- parsed: after the error return of a failed read ("failed to read the
  offload binary");
- stop: the first line of the code that loads an image
  (``std::unique_ptr<MemoryBuffer> Buffer;``), whose first run after a
  start ends the selection; later loads (a fallback) do not move it.

    python3 gpu/realrt/selection_timer.py \
        offload/plugins-nextgen/common/src/PluginInterface.cpp
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: The timer, put before the first function the anchors are in.
TIMER = """\
// kdl: measurement only (gpu/realrt/selection_timer.py), never part of the
// series. What loadBinary spends on an OffloadBinary container before it
// loads an entry; written at exit to $KDL_SELECTION_TIMER, one line per call:
// "ENTRIES TOTAL_NS PARSE_NS".
#include <chrono>
#include <cstdio>
#include <cstdlib>
namespace {
struct KdlSelectionTimer {
  using Clock = std::chrono::steady_clock;
  struct Record {
    size_t Entries;
    long long TotalNs, ParseNs;
  } Records[1 << 14];
  size_t Count = 0;
  bool Running = false;
  size_t Entries = 0;
  Clock::time_point Start, Parsed;
  void start() {
    Running = true;
    Entries = 0;
    Start = Parsed = Clock::now();
  }
  void parsed(size_t N) {
    Parsed = Clock::now();
    Entries = N;
  }
  void stop() {
    if (!Running)
      return;
    Clock::time_point End = Clock::now();
    Running = false;
    if (Count < std::size(Records))
      Records[Count++] = {Entries, ns(End - Start), ns(Parsed - Start)};
  }
  static long long ns(Clock::duration D) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(D).count();
  }
  ~KdlSelectionTimer() {
    const char *Path = std::getenv("KDL_SELECTION_TIMER");
    FILE *F = Path && Count ? std::fopen(Path, "a") : nullptr;
    if (!F)
      return;
    for (size_t I = 0; I < Count; ++I)
      std::fprintf(F, "%zu %lld %lld\\n", Records[I].Entries,
                   Records[I].TotalNs, Records[I].ParseNs);
    std::fclose(F);
  }
};
// A function's static: offload builds with -Werror=global-constructors.
KdlSelectionTimer &kdlTimer() {
  static KdlSelectionTimer Timer;
  return Timer;
}
} // namespace

"""

#: The first function of the loop, which the timer precedes.
BEFORE = "static bool isLoadableOffloadEntry("
#: Where a container is recognized, in the order tried.
STARTS = (
    "    function_ref<Expected<DeviceImageTy *>(StringRef)> LoadImage) {\n",
    "  if (identify_magic(InputTgtImage) == file_magic::offload_binary) {\n",
)
PARSED = '"failed to read the offload binary");\n'
STOP = re.compile(r"^( +)std::unique_ptr<MemoryBuffer> Buffer;\n", re.M)


def instrument(text: str) -> str:
    """*text* with the timer at its anchors; ValueError if one is missing."""
    if "kdlTimer()" in text:
        raise ValueError("the timer is already in it")
    at = text.find(BEFORE)
    if at < 0:
        raise ValueError(f"no {BEFORE!r}")
    text = text[:at] + TIMER + text[at:]
    start = next((s for s in STARTS if s in text), None)
    if start is None:
        raise ValueError("no place where a container is recognized")
    text = text.replace(start, start + "  kdlTimer().start();\n", 1)
    if text.count(PARSED) != 1:
        raise ValueError(f"{PARSED!r} is not there once")
    text = text.replace(PARSED, PARSED + "  kdlTimer().parsed(Entries.size());\n")
    loader = text.find("GenericDeviceTy::loadBinary(GenericPluginTy &Plugin,")
    stop = STOP.search(text, loader)
    if loader < 0 or stop is None:
        raise ValueError("no image load in loadBinary")
    indent = stop.group(1)
    text = text[: stop.start()] + f"{indent}kdlTimer().stop();\n" + text[stop.start() :]
    return text


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} PluginInterface.cpp", file=sys.stderr)
        return 2
    path = Path(argv[1])
    try:
        path.write_text(instrument(path.read_text()))
    except (OSError, ValueError) as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
