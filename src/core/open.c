// SPDX-License-Identifier: MIT
/*
 * Opening a path (src/core/image.h): a remote directory holding a
 * shard index, a local directory, one part of a set of files, or one
 * container.  The one place that chooses between a single load (image.c)
 * and a mount of several containers (collection.c).
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "core/diag.h"
#include "core/format.h"
#include "core/image.h"
#include "core/source.h"
#include "open_i.h"

int tfs_image_open(struct tfs_image **out, const char *path,
		   const struct tfs_build_options *opts, struct tfs_diag *d)
{
	struct tfs_source src;
	struct stat st;
	int ret;

	if (tfs_source_is_url(path)) {
		char *dir = NULL, *index = NULL;

		/* a remote prefix or repository holding an index */
		ret = tfs_source_url_index(path, &dir, &index, d);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			ret = tfs_image_open_sharded(out, dir, index, opts, d);
			free(dir);
			free(index);
			return ret;
		}
	} else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		return tfs_image_open_dir(out, path, opts, d);
	}
	ret = tfs_source_open(&src, path, d);
	if (ret)
		return ret;
	/* one part of a set of files mounts the whole set */
	ret = tfs_image_open_set(out, path, &src, tfs_format_detect(&src), opts,
				 d);
	if (ret != 1) {
		tfs_source_close(&src);
		return ret;
	}
	tfs_diag_clear(d);
	return tfs_image_load(out, &src, opts, d);
}

