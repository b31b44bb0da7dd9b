/* SPDX-License-Identifier: MIT */
/*
 * TFS_PRIVATE marks the internal functions that the tensorfs binaries (the
 * CLI and the FUSE daemon, src/cli and src/fuse) call in libtensorfs.so.0.
 * The core is built with -fvisibility=hidden, so only these and the public
 * API (TFS_API, tensorfs/tensorfs.h) can leave the library; the version
 * script (src/lib/libtensorfs.map.in) puts these under the version node
 * TENSORFS_PRIVATE_<project version>.  That node is not an API: it changes
 * with every release, and only the tensorfs binaries of the same version
 * use it (the dynamic linker refuses a binary whose version node the
 * library lacks; docs/library.md).  Mark a function here only when a binary
 * calls it: tests/lib/example.sh checks that the binary imports every one.
 */
#ifndef TENSORFS_ABI_H
#define TENSORFS_ABI_H

#if defined(__GNUC__)
#define TFS_PRIVATE __attribute__((visibility("default")))
#else
#define TFS_PRIVATE
#endif

#endif
