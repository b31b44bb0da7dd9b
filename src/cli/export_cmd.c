// SPDX-License-Identifier: MIT
/*
 * tensorfs convert: any input out as safetensors, the bytes of the mount's
 * .tensorfs/export/ files (src/views/export.h: one code path), and
 * tensorfs pack: a tree of tensor files back into safetensors (pack.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "views/export.h"

struct convert_opts {
	bool force;
	bool bad;
	uint64_t shard;
	const char *bad_value;
};

static bool convert_option(void *ctx, const char *opt)
{
	struct convert_opts *c = ctx;

	if (strcmp(opt, "--force") == 0) {
		c->force = true;
		return true;
	}
	if (strcmp(opt, "--max-shard-size") == 0) {
		c->bad = true; /* its value goes after '=' */
		c->bad_value = "";
		return true;
	}
	if (strncmp(opt, "--max-shard-size=", 17) == 0) {
		if (tfs_parse_size(opt + 17, &c->shard) || !c->shard) {
			c->bad = true;
			c->bad_value = opt + 17;
		}
		return true;
	}
	return false;
}

static int convert_build(void *ctx, struct tfs_build_options *o)
{
	struct convert_opts *c = ctx;

	if (c->bad) {
		tfs_cli_say(stderr,
			    "%s convert: --max-shard-size=%s: not a size "
			    "above 0 (--max-shard-size=2G)\n",
			    tfs_progname, c->bad_value);
		return -1;
	}
	o->no_export = false;
	o->export_shard = c->shard;
	return 0;
}

/* progress over several files */
struct convert_progress {
	struct tfs_progress p;
	uint64_t before;
};

static void convert_cb(void *arg, uint64_t done)
{
	struct convert_progress *cp = arg;

	tfs_progress_cb(&cp->p, done);
}

int tfs_cli_tmpfile(const char *dest, char **tmp)
{
	char *copy = strdup(dest);
	const char *base = strrchr(dest, '/') ? strrchr(dest, '/') + 1 : dest;
	mode_t mask;
	int fd, err;

	*tmp = NULL;
	if (!copy ||
	    asprintf(tmp, "%s/.%s.tmp-XXXXXX", dirname(copy), base) < 0) {
		free(copy);
		*tmp = NULL;
		return -ENOMEM;
	}
	free(copy);
	fd = mkstemp(*tmp);
	if (fd < 0) {
		fd = -errno;
		free(*tmp);
		*tmp = NULL;
		return fd;
	}
	/* what creat(2) would give: 0666 less the umask */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask)) {
		err = -errno;
		close(fd);
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
		return err;
	}
	return fd;
}

/*
 * Write @path through a temporary name in its directory, renamed at the
 * end: export file @file, or (@file == UINT32_MAX) @mem's @len bytes.
 */
static int write_one(struct tfs_image *img, const struct tfs_export *e,
		     uint32_t file, const char *mem, size_t len,
		     const char *path, bool force, struct convert_progress *cp)
{
	char *tmp = NULL;
	struct stat st;
	int fd = -1, ret = 0;

	if (!force && lstat(path, &st) == 0) {
		ret = -EEXIST;
		goto out;
	}
	fd = tfs_cli_tmpfile(path, &tmp);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	if (!ret && file == UINT32_MAX) {
		ssize_t w = write(fd, mem, len);

		ret = w < 0 ? -errno : (size_t)w != len ? -EIO : 0;
	} else if (!ret) {
		cp->p.done_before = cp->before;
		ret = tfs_export_write(img, e, file, fd, convert_cb, cp);
		cp->before += e->files[file].size;
	}
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	free(tmp);
	return ret;
}

int tfs_cmd_convert(int argc, char **argv)
{
	static const struct tfs_cli_cmd a = {
		.tail = "DEST",
		.trailing = 1,
		.what = "Write the inputs' tensors as safetensors to DEST (a "
			".safetensors file; a directory for shards): the bytes "
			"of the mount's .tensorfs/export/.",
		.opts_usage = "[--force] [--max-shard-size=SIZE]",
		.opts_help =
			"  --force  replace DEST's files if they exist\n"
			"  --max-shard-size=SIZE\n"
			"           shards past SIZE (default 5000000000, "
			"like the Hub)\n"
			"           into DEST/model-0000K-of-0000N.safetensors "
			"and\n"
			"           DEST/model.safetensors.index.json\n",
		.option = convert_option,
		.build = convert_build};
	struct tfs_image_options io = {.log = tfs_cli_log_stderr};
	struct convert_opts c = {0};
	struct convert_progress cp = {0};
	const struct tfs_export *e;
	struct tfs_image *img;
	const char *dest;
	char *path = NULL, *index = NULL;
	size_t index_len = 0;
	struct stat st;
	bool as_dir;
	uint64_t total = 0;
	uint32_t f;
	int i, k, ret;

	ret = tfs_cli_open_cmd(argc, argv, &a, &c, &img, &i, &k);
	if (ret)
		return TFS_CLI_OPENED(ret);
	tfs_image_configure(img, &io);
	dest = argv[i + k];
	e = tfs_tree_export(img->tree);
	if (!e) {
		tfs_cli_say(stderr, "%s convert: cannot plan the export: %s\n",
			    tfs_progname,
			    strerror(img->tree->lazy_dir
					     ? -img->tree->lazy_dir->err
					     : ENOENT));
		tfs_image_close(img);
		return TFS_EXIT_IO;
	}
	as_dir = e->nfiles > 1 || (stat(dest, &st) == 0 && S_ISDIR(st.st_mode));
	if (e->nfiles > 1 && mkdir(dest, 0777) && errno != EEXIST) {
		ret = -errno;
		tfs_cli_say(stderr, "%s convert: %s: %s\n", tfs_progname, dest,
			    strerror(-ret));
		tfs_image_close(img);
		return TFS_EXIT_IO;
	}
	for (f = 0; f < e->nfiles; f++)
		total += e->files[f].size;
	if (e->nfiles > 1)
		ret = tfs_export_index(e, &index, &index_len);
	tfs_progress_start(&cp.p, "converting", total);
	for (f = 0; !ret && f <= e->nfiles; f++) {
		const char *name = f < e->nfiles
					   ? e->files[f].name
					   : "model.safetensors.index.json";

		if (f == e->nfiles && !index)
			break;
		free(path);
		path = NULL;
		if (as_dir && asprintf(&path, "%s/%s", dest, name) < 0)
			ret = -ENOMEM;
		if (!ret && !as_dir && !(path = strdup(dest)))
			ret = -ENOMEM;
		if (!ret)
			ret = write_one(img, e, f < e->nfiles ? f : UINT32_MAX,
					index, index_len, path, c.force,
					&cp);
	}
	tfs_progress_clear(&cp.p);
	if (ret) {
		tfs_cli_say(stderr, "%s convert: %s: %s%s\n", tfs_progname,
			    path ? path : dest, strerror(-ret),
			    ret == -EEXIST ? " (--force replaces it)" : "");
	} else {
		tfs_cli_say(stderr,
			    "%s convert: %s: %u %s in %u %s, %llu bytes%s\n",
			    tfs_progname, dest, e->nitems,
			    e->nitems == 1 ? "tensor" : "tensors", e->nfiles,
			    e->nfiles == 1 ? "file" : "files",
			    (unsigned long long)total,
			    e->nleft ? "; some left out, listed in "
				       "__metadata__ tensorfs.left_out"
				     : "");
	}
	free(path);
	free(index);
	tfs_image_close(img);
	return ret == -EEXIST	? TFS_EXIT_USAGE
	       : ret == -ENOMEM ? TFS_EXIT_USAGE
	       : ret		? TFS_EXIT_IO
				: TFS_EXIT_OK;
}
