//===- common.h - timing, file and JSON helpers of the GPU harness --------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every harness program prints exactly one JSON document on stdout; times are
// integer nanoseconds from CLOCK_MONOTONIC (std::chrono::steady_clock), taken
// on the host immediately around the calls named in the key. Errors go to
// stderr and exit non-zero, except where a program records a failing call as
// data (the baseline probes).
//
//===----------------------------------------------------------------------===//

#ifndef KDL_GPU_COMMON_H
#define KDL_GPU_COMMON_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace kdl {

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] inline void fatal(const std::string &Msg) {
  std::fprintf(stderr, "error: %s\n", Msg.c_str());
  std::exit(1);
}

inline std::vector<char> readFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    fatal(Path + ": cannot open");
  std::vector<char> Data((std::istreambuf_iterator<char>(In)),
                         std::istreambuf_iterator<char>());
  // PTX must be NUL-terminated for cuModuleLoadData; harmless for binaries.
  Data.push_back('\0');
  return Data;
}

inline std::string jsonEscape(const std::string &S) {
  std::string Out;
  for (char C : S) {
    switch (C) {
    case '"':
      Out += "\\\"";
      break;
    case '\\':
      Out += "\\\\";
      break;
    case '\n':
      Out += "\\n";
      break;
    default:
      if (static_cast<unsigned char>(C) < 0x20) {
        char Buf[8];
        std::snprintf(Buf, sizeof(Buf), "\\u%04x", C);
        Out += Buf;
      } else {
        Out += C;
      }
    }
  }
  return Out;
}

/// A flat JSON object built key by key, printed once.
class JsonObject {
  std::ostringstream OS;
  bool First = true;
  void key(const std::string &K) {
    OS << (First ? "{" : ", ") << '"' << jsonEscape(K) << "\": ";
    First = false;
  }

public:
  JsonObject &str(const std::string &K, const std::string &V) {
    key(K);
    OS << '"' << jsonEscape(V) << '"';
    return *this;
  }
  JsonObject &num(const std::string &K, int64_t V) {
    key(K);
    OS << V;
    return *this;
  }
  JsonObject &real(const std::string &K, double V) {
    key(K);
    char Buf[64];
    std::snprintf(Buf, sizeof(Buf), "%.9g", V);
    OS << Buf;
    return *this;
  }
  JsonObject &boolean(const std::string &K, bool V) {
    key(K);
    OS << (V ? "true" : "false");
    return *this;
  }
  JsonObject &null(const std::string &K) {
    key(K);
    OS << "null";
    return *this;
  }
  /// Insert already-formatted JSON (an object or array) under K.
  JsonObject &raw(const std::string &K, const std::string &V) {
    key(K);
    OS << V;
    return *this;
  }
  JsonObject &samples(const std::string &K, const std::vector<int64_t> &V) {
    key(K);
    OS << '[';
    for (size_t I = 0; I < V.size(); ++I)
      OS << (I ? "," : "") << V[I];
    OS << ']';
    return *this;
  }
  std::string done() const { return First ? "{}" : OS.str() + "}"; }
};

} // namespace kdl

#endif // KDL_GPU_COMMON_H
