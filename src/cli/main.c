// SPDX-License-Identifier: MIT
/*
 * tensorfs: mount a tensor container read-only, or inspect it without FUSE.
 * Dispatches to a subcommand (commands.c) or to the FUSE mount (src/fuse).
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cli/cli.h"
#include "core/source.h"

static void short_usage(void)
{
	fprintf(stderr,
		"usage: tensorfs [options] INPUT... MOUNTPOINT\n"
		"       tensorfs ls|cat|info|xattr|verify|stats|diff|convert|pack|thumbnail|open [--help] ...\n"
		"Try 'tensorfs --help' for more.\n");
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{"ls", tfs_cmd_ls},
		{"cat", tfs_cmd_cat},
		{"info", tfs_cmd_info},
		{"xattr", tfs_cmd_xattr},
		{"verify", tfs_cmd_verify},
		{"mount", tfs_cmd_mount},
		{"stats", tfs_cmd_stats},
		{"diff", tfs_cmd_diff},
		{"convert", tfs_cmd_convert},
		{"pack", tfs_cmd_pack},
		{"thumbnail", tfs_cmd_thumbnail},
		{"open", tfs_cmd_open},
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
