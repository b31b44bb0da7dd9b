/* SPDX-License-Identifier: MIT */
/*
 * The command line: shared helpers of the subcommands and the mount path.
 * Only src/cli and src/fuse print.
 */
#ifndef TFS_CLI_H
#define TFS_CLI_H

#include <stdio.h>

#include "tensorfs/builder.h"
#include "tensorfs/diag.h"
#include "tensorfs/image.h"

/* Exit statuses (README "Exit status" lists them). */
enum tfs_exit {
	TFS_EXIT_OK = 0,
	TFS_EXIT_USAGE = 1,	  /* bad arguments, or an internal failure */
	TFS_EXIT_MALFORMED = 2,	  /* the container breaks its format's rules */
	TFS_EXIT_UNSUPPORTED = 3, /* not recognised, or a feature we lack */
	TFS_EXIT_IO = 4,	  /* cannot open, map or read the container */
	TFS_EXIT_MOUNT = 5,	  /* the mount itself failed */
	TFS_EXIT_NOTFOUND = 6,	  /* cat: no such tensor */
};

/* the exit status for a failure -errno from loading a container */
int tfs_exit_for(int err);

/*
 * Open @n inputs: one container file or directory, or several files (a
 * directory each).  Prints the one-line refusal on failure, and a warning
 * per container a directory mount left out; returns an exit status (0 on
 * success, *img set).
 */
int tfs_cli_open_inputs(char *const *inputs, int n,
			const struct tfs_build_options *opts,
			struct tfs_image **img);

int tfs_cmd_ls(int argc, char **argv);
int tfs_cmd_cat(int argc, char **argv);
int tfs_cmd_info(int argc, char **argv);
int tfs_cmd_xattr(int argc, char **argv);
int tfs_cmd_verify(int argc, char **argv);

/* the mount command (mount_cmd.c): argv[0] is the program or "mount" */
int tfs_cmd_mount(int argc, char **argv);

/*
 * Remote sources (remote_cli.c): one -o option, 1 if it was a remote one,
 * 0 if not, -1 if its value is bad (printed); setup applies them and
 * $TENSORFS_REMOTE_OPTIONS before any input is opened (-1 printed);
 * mounted once the daemon serves.
 */
int tfs_cli_remote_option(const char *opt, size_t len);
int tfs_cli_remote_setup(void);
void tfs_cli_remote_mounted(void);
/* @path as it may be printed: a URL without its query or password */
const char *tfs_cli_shown(const char *path, char *buf, size_t n);

/* the whole help text */
void tfs_usage(FILE *f);

extern const char *tfs_progname;

#endif
