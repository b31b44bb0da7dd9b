/* SPDX-License-Identifier: MIT */
/*
 * One decoding step of a stream codec over the container's mapping, under
 * the fault guard the program set (tfs_codec_set_guard: the core's SIGBUS
 * guard): bytes that vanish mid-step (the container was truncated) make the
 * decoder unusable for good, with one message.  Shared by the zstd and
 * deflate decoders.
 */
#ifndef TFS_CODEC_GUARD_H
#define TFS_CODEC_GUARD_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "codec/codec.h"

/* codec.c: the guard set by tfs_codec_set_guard(), or NULL */
extern tfs_codec_guard_fn tfs_codec_guard;

/* @fn(@arg) guarded; -EIO once the bytes have vanished (@vanished set and
 * @msg says so), else what @fn returned */
static inline int tfs_codec_guarded_step(int (*fn)(void *), void *arg,
					 bool *vanished, char *msg,
					 size_t msg_len)
{
	int ret;

	if (*vanished)
		return -EIO;
	ret = tfs_codec_guard ? tfs_codec_guard(fn, arg) : fn(arg);
	if (ret != -EFAULT)
		return ret;
	*vanished = true;
	snprintf(msg, msg_len,
		 "the stored bytes vanished while being decoded (the "
		 "container was truncated?)");
	return -EIO;
}

#endif
