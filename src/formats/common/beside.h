/* SPDX-License-Identifier: MIT */
/*
 * The file beside a container that holds its weights or its layers, named
 * by the container's stem ("model.xml" -> "model.bin", "yolo.weights" ->
 * "yolo.cfg"): OpenVINO's .bin, ncnn's .bin, Darknet's .cfg and .weights.
 */
#ifndef TFS_FORMATS_BESIDE_H
#define TFS_FORMATS_BESIDE_H

#include <stddef.h>
#include <stdint.h>

struct tfs_builder;
struct tfs_diag;
struct tfs_source;

/*
 * "<stem of @src's file name>@suffix" into @out (@len bytes): 0, or
 * -ENAMETOOLONG with @d saying "@what name is too long for its @suffix"
 * (@what: "weights: the model's").  @src must have a path.
 */
int tfs_name_beside(const struct tfs_source *src, const char *suffix, char *out,
		    size_t len, const char *what, struct tfs_diag *d);

/*
 * The companion @name (tfs_name_beside's) opened as *@source.  0 when it
 * is there; 0 too when it is missing, with *@unreadable set to @why
 * ("@what: <the open's message>", @why_len bytes) and @d cleared, for a
 * reader that lists what is in it as unreadable; or -errno with @d filled.
 */
int tfs_open_beside(struct tfs_builder *b, const char *name, const char *what,
		    uint32_t *source, char *why, size_t why_len,
		    const char **unreadable, struct tfs_diag *d);

/*
 * The weights beside @src ("<stem>@suffix", tfs_name_beside's, into @name,
 * @name_len bytes) opened as tfs_open_beside does, @why being
 * TFS_DIAG_MSG_MAX bytes; when opened, its bytes in *@data (when not
 * NULL) and *@size.  When @src was read from memory there is no stem:
 * @name is "model@suffix" and *@unreadable says so of @container ("the
 * model").
 */
int tfs_open_weights_beside(struct tfs_builder *b, const struct tfs_source *src,
			    const char *suffix, const char *container,
			    char *name, size_t name_len, uint32_t *source,
			    const uint8_t **data, uint64_t *size, char *why,
			    const char **unreadable, struct tfs_diag *d);

#endif
