// SPDX-License-Identifier: MIT
/*
 * tensorfs: mount a tensor container read-only, or inspect it without FUSE.
 * Dispatches to a subcommand (commands.c) or to the FUSE mount (src/fuse).
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cli/cli.h"
#include "tensorfs/source.h"

const char *tfs_progname = "tensorfs";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tensorfs [options] CONTAINER MOUNTPOINT\n"
		"       tensorfs ls [--flat] [--npy] CONTAINER\n"
		"       tensorfs cat [--flat] [--npy] CONTAINER NAME|PATH\n"
		"       tensorfs info [--flat] [--npy] CONTAINER\n"
		"       tensorfs xattr [--flat] [--npy] CONTAINER [PATH]\n"
		"       tensorfs verify [--flat] [--npy] CONTAINER\n"
		"       tensorfs --help | --version\n"
		"\n"
		"Mount a tensor container (checkpoint) read-only: every tensor is a\n"
		"file holding its raw element bytes; dtype, shape and the rest are\n"
		"user.tensorfs.* extended attributes; .tensorfs/manifest.json and\n"
		"metadata.json describe the container.  The format is detected from\n"
		"the file's content.\n"
		"\n"
		"Subcommands (no FUSE needed):\n"
		"  ls      one line per tensor: path in the mount, dtype, shape, bytes\n"
		"  cat     write one tensor's bytes (by stored name or mount path) to\n"
		"          stdout; also any file of the tree, e.g. .tensorfs/manifest.json\n"
		"  info    format, size, tensor count and the container's metadata\n"
		"  xattr   the extended attributes of PATH (default: the root)\n"
		"  verify  check every structural rule, every digest, and that\n"
		"          every compressed tensor decodes to its size; one line\n"
		"          per tensor and a summary (exit 2 on any failure)\n"
		"  --flat  place every tensor at the root under its full stored name\n"
		"  --npy   every tensor file is a .npy file (PATH.npy): numpy's\n"
		"          header, then the tensor's bytes (np.load works)\n"
		"\n"
		"Mount options:\n"
		"  -o flat          as --flat\n"
		"  -o npy           as --npy: np.load(PATH.npy, mmap_mode='r') works\n"
		"  -o cache_size=SIZE\n"
		"                   memory for decoded (zstd) tensor data, least\n"
		"                   recently used evicted first; bytes or with\n"
		"                   K/M/G/T (default 1G, or a quarter of the RAM\n"
		"                   if less; at least 1M)\n"
		"  -o verify=MODE   digests of stored bytes: first (default: when\n"
		"                   a tensor is first read), always (every read;\n"
		"                   slow), off.  A mismatch fails that tensor's\n"
		"                   reads with EIO and is logged\n"
		"  -f               stay in the foreground (logs to stderr, else syslog)\n"
		"  -d               debug output (implies -f)\n"
		"  -s               single-threaded\n"
		"  -o OPT[,OPT...]  other mount options, passed to FUSE\n"
		"  -h, --help       this help, with FUSE's options\n"
		"  -V, --version    tensorfs and libfuse versions\n"
		"\n"
		"Exit status: 0 ok, 1 usage, 2 malformed container (verify: a check\n"
		"failed), 3 unsupported or unrecognised container, 4 cannot open or\n"
		"read it, 5 mount failed, 6 no such tensor.  Unmount with:\n"
		"fusermount3 -u MOUNTPOINT\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	/* a container truncated while we decode it: -EIO, not a crash */
	tfs_source_catch_sigbus();
	if (!cmd) {
		usage(stderr);
		return TFS_EXIT_USAGE;
	}
	if (strcmp(cmd, "ls") == 0)
		return tfs_cmd_ls(argc - 1, argv + 1);
	if (strcmp(cmd, "cat") == 0)
		return tfs_cmd_cat(argc - 1, argv + 1);
	if (strcmp(cmd, "info") == 0)
		return tfs_cmd_info(argc - 1, argv + 1);
	if (strcmp(cmd, "xattr") == 0)
		return tfs_cmd_xattr(argc - 1, argv + 1);
	if (strcmp(cmd, "verify") == 0)
		return tfs_cmd_verify(argc - 1, argv + 1);
	if (strcmp(cmd, "help") == 0 ||
	    (argc == 2 &&
	     (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0))) {
		usage(stdout);
#if TFS_HAVE_FUSE
		return tfs_mount_main(argc, argv);
#else
		return TFS_EXIT_OK;
#endif
	}
	if (argc == 2 &&
	    (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)) {
		printf("tensorfs %s\n", TFS_VERSION);
#if TFS_HAVE_FUSE
		return tfs_mount_main(argc, argv);
#else
		return TFS_EXIT_OK;
#endif
	}
	if (strcmp(cmd, "mount") == 0) {
		argv[1] = argv[0];
		argc--;
		argv++;
	}
#if TFS_HAVE_FUSE
	return tfs_mount_main(argc, argv);
#else
	fprintf(stderr, "tensorfs: built without FUSE; use ls, cat or info\n");
	return TFS_EXIT_USAGE;
#endif
}
