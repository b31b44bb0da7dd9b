// SPDX-License-Identifier: MIT
/*
 * The mount (src/fuse/run.h): a session over the validated image, mounted
 * before we detach, so the parent returns when the mount is ready, and a
 * refused container never reaches here.  SIGINT/SIGTERM/SIGHUP end the loop
 * and unmount (libfuse's handlers); so does -o idle_timeout=, by a SIGTERM
 * to ourselves when no request came for that long.  Integrity failures seen by
 * reads are logged through fuse_log: to the -o logfile= file if given, else
 * stderr in the foreground, syslog once detached.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fuse/errors.h"
#include "fuse/fs.h"
#include "fuse/run.h"

static void log_to_syslog(enum fuse_log_level level, const char *fmt,
			  va_list ap)
{
	vsyslog((int)level, fmt, ap);
}

/* -o logfile=: where the log goes (fuse_log's callback takes no argument) */
static FILE *logfile;

static void log_to_file(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char when[32];
	struct tm tm;
	time_t now = time(NULL);

	(void)level;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* one line per call: fuse_log's lines end with a newline */
	flockfile(logfile);
	fprintf(logfile, "%s [%ld] ", when, (long)getpid());
	vfprintf(logfile, fmt, ap);
	funlockfile(logfile);
	fflush(logfile);
}

/* the same failure, for .tensorfs/errors.json */
static void record_failure(void *arg, uint32_t tensor, const char *what)
{
	struct tfs_fs *fs = arg;

	if (fs->errors)
		tfs_errors_add(fs->errors, tensor, what);
}

/* integrity failures seen by the read path */
static void log_integrity(void *arg, const char *line)
{
	(void)arg;
	fuse_log(FUSE_LOG_ERR, "tensorfs: %s\n", line);
}

void tfs_fuse_help(void)
{
	printf("\nFUSE options:\n");
	fuse_lowlevel_help();
}

const char *tfs_fuse_version(void)
{
	return fuse_pkgversion();
}

/*
 * The "MAJ:MIN" of the mount at @dir (a canonical path) from
 * /proc/self/mountinfo: the name of its backing device in /sys/class/bdi.
 * Reading it asks nothing of our own mount, which is not served yet.
 */
static void find_bdi(const char *dir, char *out, size_t outlen)
{
	char *line = NULL, *mnt, *dev, *save = NULL, *esc;
	size_t cap = 0, n;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	out[0] = '\0';
	if (!f || !(esc = malloc(4 * strlen(dir) + 1))) {
		if (f)
			fclose(f);
		return;
	}
	/* mountinfo writes space, tab, newline and backslash as \ooo */
	for (n = 0; *dir; dir++) {
		if (strchr(" \t\n\\", *dir))
			n += (size_t)sprintf(esc + n, "\\%03o",
					     (unsigned char)*dir);
		else
			esc[n++] = *dir;
	}
	esc[n] = '\0';
	while (getline(&line, &cap, f) > 0) {
		/* id parent MAJ:MIN root mountpoint ... */
		if (!strtok_r(line, " ", &save) || !strtok_r(NULL, " ", &save))
			continue;
		dev = strtok_r(NULL, " ", &save);
		if (!dev || !strtok_r(NULL, " ", &save))
			continue;
		mnt = strtok_r(NULL, " ", &save);
		if (mnt && strcmp(mnt, esc) == 0 && strlen(dev) < outlen)
			strcpy(out, dev); /* the last one is ours */
	}
	free(line);
	free(esc);
	fclose(f);
}

/*
 * argv for fuse_session_new: read-only, our fsname, the caller's options.
 * auto_unmount: a read-only view holds no state, so a daemon killed (by
 * kill -9, the OOM killer, a memory cgroup) should leave an empty mount
 * point rather than a dead mount ("Transport endpoint is not connected");
 * libfuse then mounts through fusermount3, which stays to unmount.
 */
static int session_args(struct fuse_args *fa, const struct tfs_fuse_args *a)
{
	char *opts = NULL;
	int ret = -1;

	if (fuse_opt_add_arg(fa, "tensorfs") ||
	    (a->debug && fuse_opt_add_arg(fa, "-d")) ||
	    fuse_opt_add_opt(&opts,
			     "ro,default_permissions,subtype=tensorfs") ||
	    (a->auto_unmount && fuse_opt_add_opt(&opts, "auto_unmount")))
		goto out;
	if (a->fsname) {
		char *fsname;

		if (asprintf(&fsname, "fsname=tensorfs:%s", a->fsname) < 0)
			goto out;
		ret = fuse_opt_add_opt_escaped(&opts, fsname);
		free(fsname);
		if (ret)
			goto out;
		ret = -1;
	}
	if (a->fuse_options && *a->fuse_options &&
	    fuse_opt_add_opt(&opts, a->fuse_options))
		goto out;
	ret = fuse_opt_add_arg(fa, "-o") || fuse_opt_add_arg(fa, opts) ? -1 : 0;
out:
	free(opts);
	return ret;
}

/*
 * A user's mount: fusermount3 before 3.15 checks a dead mount as root, who
 * may not look into it, and leaves it (libfuse issue 586).  So a watcher of
 * ours, a shell that is no copy of the daemon (tests and tools find the
 * daemon by its command line), waits for the daemon's end of a pipe to
 * close, and when the mount point then fails to list (ENOTCONN: the daemon
 * was killed; a clean exit unmounted already) runs fusermount3 -u -z as
 * the user.  Nothing is done when no watcher can be started.
 */
static void watch_unmount(const char *mountpoint)
{
	static const char script[] = "cat <&3 >/dev/null; exec 3<&-; "
				     "ls -- \"$1\" >/dev/null 2>&1 || "
				     "exec fusermount3 -u -z -q -- \"$1\"";
	int p[2], fd;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return;
	pid = fork();
	if (pid == 0) {
		setsid();
		/* fd 3 without close-on-exec (dup2 to itself keeps it) */
		if ((p[0] == 3 ? fcntl(3, F_SETFD, 0) : dup2(p[0], 3)) < 0)
			_exit(1);
		close_range(4, ~0u, 0); /* /dev/fuse above all */
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl("/bin/sh", "sh", "-c", script, "tensorfs-unmount-watch",
		      mountpoint, (char *)NULL);
		_exit(1);
	}
	/* the write end stays open in the daemon (close-on-exec) */
	close(p[0]);
	if (pid < 0)
		close(p[1]);
}

static void *trim_heap(void *arg)
{
	(void)arg;
	malloc_trim(0);
	return NULL;
}

/*
 * The loaders' scratch heap (JSON, builder) back to the system, on a
 * thread of the daemon once the mount command has returned: trimming the
 * heap of a 100,000-tensor load took 8 % of the mount's time.
 */
static void trim_heap_later(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, trim_heap, NULL) == 0)
		pthread_detach(th);
	else
		malloc_trim(0);
}

struct idle {
	struct tfs_fs *fs;
	unsigned timeout;
};

/*
 * -o idle_timeout=: once a second, the time since the last request (an
 * open file is a request going on: the kernel's caches answer many
 * requests without us, reads of a cached file among them); past
 * the timeout, a SIGTERM to ourselves ends the loop the way a user's kill
 * does (libfuse's handler; the blocked read returns EINTR), and the mount
 * goes (fuse_session_unmount: lazily, so a shell's idle working directory
 * there does not keep it).
 */
static void *idle_watch(void *arg)
{
	const struct idle *w = arg;
	long long idle;

	for (;;) {
		sleep(1);
		if (atomic_load(&w->fs->open_files) > 0)
			atomic_store(&w->fs->last_request, tfs_fs_now());
		idle = tfs_fs_now() -
		       atomic_load_explicit(&w->fs->last_request,
					    memory_order_relaxed);
		if (idle >= (long long)w->timeout)
			break;
	}
	fuse_log(FUSE_LOG_INFO, "tensorfs: idle for %lld s: unmounting\n",
		 idle);
	kill(getpid(), SIGTERM);
	return NULL;
}

enum tfs_fuse_result tfs_fuse_run(struct tfs_image *img,
				  const struct tfs_fuse_args *a)
{
	struct fuse_args fa = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	struct tfs_image_options io = a->read;
	struct tfs_fs fs = {.img = img,
			    .uid = getuid(),
			    .gid = getgid(),
			    .drop_source_cache = !a->keep_source_cache,
			    .auto_unmount = a->auto_unmount,
			    .readahead = a->readahead};
	struct idle idle = {.fs = &fs, .timeout = a->idle_timeout};
	char *canonical = NULL;
	pthread_t idle_thread;
	bool foreground = a->foreground || a->debug;
	enum tfs_fuse_result res = TFS_FUSE_BAD_OPTION;
	int ret;

	io.drop_input = !a->keep_source_cache;
	io.log = log_integrity;
	io.failed = record_failure;
	io.log_arg = &fs;
	fs.errors = tfs_errors_new(img);
	if (!fs.errors)
		goto out;
	if (a->logfile && !(logfile = fopen(a->logfile, "ae"))) {
		fprintf(stderr, "tensorfs: logfile=%s: %s\n", a->logfile,
			strerror(errno));
		goto out;
	}
	if (tfs_image_configure(img, &io) || session_args(&fa, a))
		goto out;
	se = fuse_session_new(&fa, &tfs_fuse_ops, sizeof(tfs_fuse_ops), &fs);
	if (!se)
		goto out;
	res = TFS_FUSE_MOUNT_FAILED;
	/*
	 * A shell starts background jobs with SIGINT ignored, and libfuse
	 * leaves ignored signals alone; "kill -INT" must still unmount.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	/*
	 * Resolved now: once mounted, a stat of it would wait for us; and
	 * the detached daemon runs in /, where a relative mount point would
	 * name another directory when a signal unmounts it.
	 */
	canonical = realpath(a->mountpoint, NULL);
	if (!canonical) {
		fprintf(stderr, "tensorfs: %s: %s\n", a->mountpoint,
			strerror(errno));
		goto out_signals;
	}
	if (fuse_session_mount(se, canonical) != 0)
		goto out_signals;
	if (a->auto_unmount && getuid() != 0)
		watch_unmount(canonical);
	if (fs.readahead)
		find_bdi(canonical, fs.bdi, sizeof(fs.bdi));
	if (logfile) {
		fuse_set_log_func(log_to_file);
	} else if (!foreground) {
		openlog("tensorfs", LOG_PID, LOG_DAEMON);
		fuse_set_log_func(log_to_syslog);
	}
	if (fuse_daemonize(foreground) != 0)
		goto out_unmount;
	trim_heap_later();
	if (idle.timeout) {
		/* after fuse_daemonize: its fork keeps no other thread */
		fs.idle_watch = true;
		atomic_store(&fs.last_request, tfs_fs_now());
		if (pthread_create(&idle_thread, NULL, idle_watch, &idle) == 0)
			pthread_detach(idle_thread);
		else
			fuse_log(FUSE_LOG_ERR,
				 "tensorfs: idle_timeout: no thread: %s\n",
				 strerror(errno));
	}
	/*
	 * Buffers of 2 MiB and more (a zstd decoder's window, a decode's
	 * scratch) mapped and unmapped, not kept by a thread's arena once
	 * freed, as glibc's moving threshold did: 16 readers of a zstd model
	 * held 58-66 MiB where 38 were in use, and a 64 MiB memory cgroup
	 * killed the daemon (docs/performance.md).
	 */
	mallopt(M_MMAP_THRESHOLD, 2 << 20);
	if (a->single_thread) {
		ret = fuse_session_loop(se);
	} else {
		/* libfuse's defaults for the thread counts */
		lc = fuse_loop_cfg_create();
		if (!lc) {
			ret = -1;
			goto out_done;
		}
		ret = fuse_session_loop_mt(se, lc);
	}
out_done:
	/* a loop ended by SIGINT/SIGTERM/SIGHUP reports the signal: clean */
	res = ret == 0 || ret == SIGINT || ret == SIGTERM || ret == SIGHUP
		      ? TFS_FUSE_OK
		      : TFS_FUSE_LOOP_FAILED;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out:
	if (lc)
		fuse_loop_cfg_destroy(lc);
	free(canonical);
	tfs_errors_free(fs.errors);
	fuse_opt_free_args(&fa);
	if (logfile) {
		fuse_set_log_func(NULL);
		fclose(logfile);
		logfile = NULL;
	}
	return res;
}
