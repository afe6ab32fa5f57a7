# Included into offload's standalone build (CMAKE_PROJECT_offload_INCLUDE):
# an installed LLVM has no llvm_gtest target, so build LLVM's copy of
# googletest from the tree's third-party/unittest, as lldb's standalone
# build does.
find_package(LLVM REQUIRED CONFIG)
list(APPEND CMAKE_MODULE_PATH "${LLVM_CMAKE_DIR}")
include(AddLLVM)
include_directories(${LLVM_INCLUDE_DIRS})
set(LLVM_THIRD_PARTY_DIR "${CMAKE_CURRENT_SOURCE_DIR}/../third-party")
if(NOT TARGET llvm_gtest)
  add_subdirectory("${LLVM_THIRD_PARTY_DIR}/unittest"
                   "${CMAKE_BINARY_DIR}/third-party/unittest" EXCLUDE_FROM_ALL)
endif()
