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

void tfs_usage(FILE *f)
{
	fprintf(f,
		"usage: tensorfs [options] INPUT... MOUNTPOINT\n"
		"       tensorfs ls [--flat] [--npy] [--as float32] [--paths] INPUT...\n"
		"       tensorfs cat [--flat] [--npy] [--as float32] INPUT... NAME|PATH\n"
		"       tensorfs info [--flat] [--npy] [--as float32] INPUT...\n"
		"       tensorfs xattr [--flat] [--npy] [--as float32] INPUT [PATH]\n"
		"       tensorfs verify [--flat] [--npy] [--as float32] INPUT...\n"
		"       tensorfs stats [--flat] [--npy] [--as float32] [--json] INPUT [NAME...]\n"
		"       tensorfs diff [--flat] [--npy] [--as float32] [--json] A B\n"
		"       tensorfs convert [--as float32] [--max-shard-size=SIZE] [--force] INPUT... DEST\n"
		"       tensorfs pack [--force] DIR DEST.safetensors\n"
		"       tensorfs --help | --version\n"
		"\n"
		"An INPUT is a container file, or a directory: a sharded model\n"
		"(with its *.safetensors.index.json) is one tree, otherwise every\n"
		"container under it is a directory.  Several files are a\n"
		"directory each.  Any part of a GGUF split model\n"
		"(NAME-00001-of-0000N.gguf), or its directory, is the whole set.\n"
		"An ONNX model (.onnx) shows every tensor: initializers at the\n"
		"root, @constants/, @attributes/, @subgraphs/, @functions/,\n"
		"@training/; a bare TensorProto is read only as NAME.pb.\n"
		"A URL is a remote container: http(s)://...,\n"
		"s3://BUCKET/KEY ($AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY,\n"
		"$AWS_SESSION_TOKEN, $AWS_REGION, $AWS_ENDPOINT_URL) or\n"
		"hf://ORG/REPO[@REVISION]/FILE ($HF_TOKEN, $HF_ENDPOINT); its\n"
		"header is fetched at mount, tensors by range when read\n"
		"(docs/remote.md).  s3://BUCKET/PREFIX/ and hf://ORG/REPO are\n"
		"directories: one tree with an index, else every container\n"
		"under them a directory (a GGUF split set one).\n"
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
		"  info    format, size, tensors, architecture, parameters, bytes\n"
		"          per dtype (tied weights counted once) and the container's\n"
		"          metadata\n"
		"  xattr   the extended attributes of PATH (default: the root)\n"
		"  verify  check every structural rule, every digest, and that\n"
		"          every compressed tensor decodes to its size; one line\n"
		"          per tensor and a summary (exit 2 on any failure)\n"
		"  stats   per tensor: count, min, max, mean, std (finite values),\n"
		"          NaN, +Inf, -Inf and zero counts; --json\n"
		"  diff    compare the tensors of A and B (files or directories,\n"
		"          any formats): same, differ (max abs, mean abs, relative\n"
		"          L2 error), dtype, shape, only-a, only-b, close; exit 0\n"
		"          same, 1 different, 2 trouble; --json, --brief (-q),\n"
		"          --atol X, --rtol Y (see diff --help)\n"
		"  convert write every tensor as safetensors to DEST (a file; a\n"
		"          directory of shards and index past --max-shard-size,\n"
		"          default 5000000000): the bytes of the mount's\n"
		"          .tensorfs/export/; never over a file without --force\n"
		"  pack    a tree of tensor files (a mount copied with cp -a, edited;\n"
		"          .npy files) back into one safetensors file\n"
		"  --flat  place every tensor at the root under its full stored name\n"
		"  --npy   every tensor file is a .npy file (PATH.npy): numpy's\n"
		"          header, then the tensor's bytes (np.load works)\n"
		"  --as float32\n"
		"          floating tensors of another dtype as float32 values\n"
		"          (--as float32,all: integers and bool too)\n"
		"  --previews\n"
		"          PATH.png pictures beside numeric tensors (-o previews)\n"
		"Options go anywhere among the arguments (GNU style); -- ends them.\n"
		"\n"
		"Mount options:\n"
		"  -o flat          as --flat\n"
		"  -o npy           as --npy: np.load(PATH.npy, mmap_mode='r') works\n"
		"  -o as=float32    as --as float32: every tensor of another floating\n"
		"                   dtype (float16, bfloat16, float8, float4, ggml\n"
		"                   quantized blocks) is shown as float32 values\n"
		"                   computed on read; the stored dtype is in\n"
		"                   user.tensorfs.stored_dtype; integers and bool\n"
		"                   stay as stored unless -o as=float32,all\n"
		"  -o previews      beside each numeric tensor of 1 or more\n"
		"                   dimensions, PATH.png: a heat map of its values\n"
		"                   (at most 512x512, sampled) over a histogram,\n"
		"                   made on first read (--previews in the CLI)\n"
		"  -o export=off    no .tensorfs/export/model.safetensors (by default\n"
		"                   every mount has it: all tensors as safetensors,\n"
		"                   docs/export.md)\n"
		"  -o export_shard=SIZE\n"
		"                   past SIZE (default 5000000000) the export is\n"
		"                   model-0000K-of-0000N.safetensors files and\n"
		"                   model.safetensors.index.json\n"
		"  -o cache_size=SIZE\n"
		"                   memory for decoded (zstd, deflate) tensor data, least\n"
		"                   recently used evicted first; bytes or with\n"
		"                   K/M/G/T (default 1G, or a quarter of the RAM\n"
		"                   or of the memory cgroup's limit if less; at\n"
		"                   least 1M)\n"
		"  -o verify=MODE   digests of stored bytes: first (default: when\n"
		"                   a tensor is first read), always (every read;\n"
		"                   slow), off.  A mismatch fails that tensor's\n"
		"                   reads with EIO and is logged\n"
		"  -o readahead=SIZE\n"
		"                   the mount's readahead (default 1M: fewer,\n"
		"                   larger read requests; 0 keeps the kernel's\n"
		"                   128K; needs root, else the kernel's stays)\n"
		"  -o keep_source_cache\n"
		"                   keep the container's pages cached after a\n"
		"                   tensor was read through the mount (by default\n"
		"                   they are dropped: the mount's cache holds the\n"
		"                   bytes, so a model is not cached twice)\n"
		"  -o logfile=PATH  append the log (integrity failures met by reads,\n"
		"                   with the time) to PATH instead of syslog/stderr\n"
		"Remote options (mount; every command reads them, comma-separated,\n"
		"from $TENSORFS_REMOTE_OPTIONS too):\n"
		"  -o cache_dir=DIR the shared chunk cache (default\n"
		"                   $XDG_CACHE_HOME/tensorfs or ~/.cache/tensorfs)\n"
		"  -o cache_max=SIZE\n"
		"                   its budget, least recently used out (16G)\n"
		"  -o no_cache      no disk cache\n"
		"  -o remote_mem=SIZE\n"
		"                   bytes in flight, whole mount (64M)\n"
		"  -o remote_conns=N\n"
		"                   parallel range requests (8)\n"
		"  -o remote_prefetch=SIZE\n"
		"                   the most fetched ahead of a read: the rest of\n"
		"                   its tensor, past it while reads go on in file\n"
		"                   order (128M)\n"
		"  -o remote_timeout=SECONDS\n"
		"                   per read; then ETIMEDOUT (30)\n"
		"  -o insecure      do not verify TLS certificates (tests only)\n"
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

static void short_usage(void)
{
	fprintf(stderr,
		"usage: tensorfs [options] INPUT... MOUNTPOINT\n"
		"       tensorfs ls|cat|info|xattr|verify|stats|diff|convert|pack [--help] ...\n"
		"Try 'tensorfs --help' for more.\n");
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{"ls", tfs_cmd_ls},	    {"cat", tfs_cmd_cat},
		{"info", tfs_cmd_info},	    {"xattr", tfs_cmd_xattr},
		{"verify", tfs_cmd_verify}, {"mount", tfs_cmd_mount},
		{"stats", tfs_cmd_stats},   {"diff", tfs_cmd_diff},
		{"convert", tfs_cmd_convert}, {"pack", tfs_cmd_pack},
	};
	const char *cmd = argc > 1 ? argv[1] : NULL;
	size_t i;

	/* a container truncated while we decode it: -EIO, not a crash */
	tfs_source_catch_sigbus();
	if (!cmd) {
		short_usage();
		return TFS_EXIT_USAGE;
	}
	if (strcmp(cmd, "help") == 0) {
		tfs_usage(stdout);
		return TFS_EXIT_OK;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmd, cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	return tfs_cmd_mount(argc, argv);
}
