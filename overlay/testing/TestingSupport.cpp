//===- TestingSupport.cpp - llvm::detail::TakeError for the overlay -------===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// llvm/Testing/Support/Error.h (ASSERT_THAT_EXPECTED, FailedWithMessage, ...)
// is installed with LLVM 22's headers, but Debian does not ship the library
// that defines the one function it declares out of line. This file defines
// it, so that the series' unit tests build unchanged against an installed LLVM.
//
//===----------------------------------------------------------------------===//

#include "llvm/Testing/Support/Error.h"

using namespace llvm;

detail::ErrorHolder detail::TakeError(Error Err) {
  ErrorHolder Holder;
  handleAllErrors(std::move(Err), [&](std::unique_ptr<ErrorInfoBase> Info) {
    Holder.Infos.push_back(std::move(Info));
  });
  return Holder;
}
