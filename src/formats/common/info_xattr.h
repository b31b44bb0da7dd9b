/* SPDX-License-Identifier: MIT */
/*
 * A line a reader gives `tensorfs info`: the root's xattr "info.<label>"
 * (ONNX's producer and opset, TF.js's format and generator, OpenVINO's
 * runtime version).
 */
#ifndef TFS_FORMATS_INFO_XATTR_H
#define TFS_FORMATS_INFO_XATTR_H

struct tfs_builder;

/* @text as "info.@label" (the key cut at 31 bytes): 0, or nonzero as the
 * builder fails (out of memory) */
int tfs_info_xattr(struct tfs_builder *b, const char *label, const char *text);

/* the same, @text's control bytes (0x01-0x1f, 0x7f) first turned to '?' */
int tfs_info_xattr_printable(struct tfs_builder *b, const char *label,
			     char *text);

#endif
