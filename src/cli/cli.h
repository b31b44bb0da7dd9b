/* SPDX-License-Identifier: MIT */
/*
 * The command line: shared helpers of the subcommands and the mount path.
 * Only src/cli and src/fuse print.
 */
#ifndef TFS_CLI_H
#define TFS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "core/builder.h"
#include "core/diag.h"
#include "core/image.h"

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

/* the plain flags a subcommand may take (tfs_cli_cmd.flags) */
enum {
	TFS_CLI_JSON = 1 << 0,	/* --json */
	TFS_CLI_PATHS = 1 << 1, /* --paths */
	TFS_CLI_FULL = 1 << 2,	/* --full */
};

/* which of them were given: the ctx of a subcommand that takes flags */
struct tfs_cli_flags {
	bool json, paths, full;
};

/* what a subcommand takes (tfs_cli_open_cmd) */
struct tfs_cli_cmd {
	const char *tail;  /* usage after the inputs: "NAME|PATH", "[PATH]" */
	bool one_input;	   /* exactly one INPUT (else INPUT...) */
	int trailing;	   /* arguments after the inputs (cat: 1) */
	int optional;	   /* of which optional (xattr: 1) */
	bool any_trailing; /* any number of them (stats: NAME...) */
	const char *what;  /* --help: one line saying what it does */
	/*
	 * reads tensors only, never .tensorfs/export/: its plan is not made
	 * (a third of a 90,000-tensor model's load)
	 */
	bool no_export;
	const char *opts_usage; /* its own options in the usage line */
	const char *opts_help;	/* --help lines for them */
	/* its plain flags (TFS_CLI_JSON...), set in @ctx, a tfs_cli_flags */
	unsigned flags;
	/* one of its own options: true when taken (@ctx as given) */
	bool (*option)(void *ctx, const char *opt);
	/*
	 * the build options as parsed, changed by the command (or NULL),
	 * before the inputs are opened: nonzero refuses (it printed why)
	 */
	int (*build)(void *ctx, struct tfs_build_options *o);
};

/* the usage (to stderr) or the whole --help (to stdout) of @cmd */
void tfs_cli_cmd_usage(FILE *f, const char *cmd, const struct tfs_cli_cmd *a);

/*
 * The start of every subcommand: options, INPUT..., the trailing
 * arguments; then open the inputs.  Returns 0 with *img, *first (index of
 * the first input in argv) and *ninputs, or the exit status to return
 * (-1: --help was printed, exit 0: see TFS_CLI_OPENED).
 */
int tfs_cli_open_cmd(int argc, char **argv, const struct tfs_cli_cmd *a,
		     void *ctx, struct tfs_image **img, int *first,
		     int *ninputs);
#define TFS_CLI_OPENED(ret) ((ret) == -1 ? TFS_EXIT_OK : (ret))

/*
 * GNU-style options: anywhere among the arguments, until "--" (which ends
 * them: what follows is positional, "-" alone too).  @take handles
 * argv[*i], moving *i past a value it takes: 1 taken, 0 not an option it
 * knows, -1 refused (it printed why).  The positional arguments end up, in
 * order, at the end of argv, from *first.  0; 1 for an unknown option
 * (argv[*bad]); -1 refused or out of memory.
 */
int tfs_cli_getopt(int argc, char **argv,
		   int (*take)(void *ctx, int argc, char **argv, int *i),
		   void *ctx, int *first, int *bad);

/*
 * --as TYPE / --as=TYPE at argv[*i] into @o: true when it was one (*i
 * moved past its value; -1 after a message when TYPE is not float32)
 */
bool tfs_cli_as_option(int argc, char **argv, int *i,
		       struct tfs_build_options *o);

/* the image's tensor records sorted by path (malloc'd), or NULL */
const struct tfs_tensor **tfs_cli_sorted_tensors(const struct tfs_image *img);
/* a node by mount path, else a tensor by its stored name; TFS_NO_NODE */
uint32_t tfs_cli_find_node(const struct tfs_tree *t, const char *what);
/* integrity failures met by reads (digest, zstd) go to stderr */
void tfs_cli_log_stderr(void *arg, const char *line);

/*
 * A progress line on stderr, only when stderr is a terminal and the work
 * is at least TFS_PROGRESS_MIN bytes; redrawn at most every 200 ms.
 */
#define TFS_PROGRESS_MIN (64ull << 20)
struct tfs_progress {
	const char *label;
	bool on;
	uint64_t total, done_before, now;
	struct timespec last;
};
void tfs_progress_start(struct tfs_progress *p, const char *label,
			uint64_t total);
void tfs_progress_show(struct tfs_progress *p, bool force);
/* a callback: @done bytes of the current item, after p->done_before */
void tfs_progress_cb(void *arg, uint64_t done);
/* erase the line (before printing on stdout to a shared terminal) */
void tfs_progress_clear(struct tfs_progress *p);

int tfs_cmd_ls(int argc, char **argv);
int tfs_cmd_stats(int argc, char **argv);
int tfs_cmd_diff(int argc, char **argv);
int tfs_cmd_cat(int argc, char **argv);
int tfs_cmd_info(int argc, char **argv);
int tfs_cmd_xattr(int argc, char **argv);
int tfs_cmd_verify(int argc, char **argv);
int tfs_cmd_convert(int argc, char **argv);
/*
 * A new file beside @dest (".NAME.tmp-XXXXXX", mode 0666 less the umask)
 * to be renamed over it: its descriptor and malloc'd name in *@tmp, or
 * -errno
 */
int tfs_cli_tmpfile(const char *dest, char **tmp);
int tfs_cmd_pack(int argc, char **argv);
/* a PNG of a container for file managers (thumbnail.c) */
int tfs_cmd_thumbnail(int argc, char **argv);
/* mount under $XDG_RUNTIME_DIR/tensorfs and xdg-open it (open_cmd.c) */
int tfs_cmd_open(int argc, char **argv);

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

/*
 * The CLI's one printer of text that may hold container bytes or user
 * input (names, paths, messages): the formatted text goes out through
 * tfs_text_safe(), so it is one printable line; a final '\n' of @fmt is
 * kept.  Returns what fputs returned.
 */
int tfs_cli_say(FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Each mount of /proc/self/mountinfo (mounts.c): @fn(@ctx, mount point,
 * type, source), escapes undone, until it returns nonzero; that value, 0
 * when all were seen, or -errno
 */
int tfs_cli_each_mount(int (*fn)(void *ctx, const char *mnt, const char *type,
				 const char *source),
		       void *ctx);
/* is @path a mount point now? */
bool tfs_cli_is_mount_point(const char *path);
/* seconds (-o idle_timeout=), 0 to TFS_CLI_SECONDS_MAX; 0 or -EINVAL */
#define TFS_CLI_SECONDS_MAX 31536000u /* a year */
int tfs_cli_parse_seconds(const char *s, unsigned *out);

/* the whole help text (usage.c) */
void tfs_usage(FILE *f);

extern const char *tfs_progname;

/*
 * info's summary of metadata.json (@text, @len bytes): lines of text, one
 * a member, long lists cut (info_summary.c); to free().  NULL when it is
 * not a JSON object or out of memory.
 */
char *tfs_cli_meta_summary(const char *text, size_t len);

#endif
