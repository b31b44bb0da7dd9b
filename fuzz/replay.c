// SPDX-License-Identifier: MIT
/*
 * Corpus replay driver: a main() for a fuzz target built without libFuzzer,
 * so any compiler (gcc in CI) replays the seed corpora and every input the
 * fuzzer ever kept through the same checks, as a meson test.
 *
 *   fuzz_<target>_replay PATH...
 *
 * Each PATH is a file, a directory (walked recursively, in sorted order, so
 * runs are reproducible) or a glob(3) pattern such as "fixtures/tsr*".
 * Missing paths are skipped: the fixture and corpus directories of a format
 * may not exist yet.  Every input is copied into a buffer of exactly its
 * size, as libFuzzer does, so a sanitizer catches a read one byte past it.
 * The path of each input is printed before it runs, so a crash names it;
 * under AddressSanitizer a leak check after each batch of inputs names the
 * batch that leaks.
 */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* under LeakSanitizer, check for leaks after each input to name it */
#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_LSAN 1
#endif
#endif
#ifdef REPLAY_LSAN
#include <sanitizer/lsan_interface.h>
#endif

static unsigned long long replayed;

#ifdef REPLAY_LSAN
/*
 * A leak check stops the world and scans the heap: ~60 ms under ASan, so
 * one per input made the 8,000-input replays take minutes.  Inputs are
 * checked in batches; a batch that leaks is named (its files are
 * printed above its LSan report, which has the stacks).
 */
#define LEAK_BATCH 64
static char *batch[LEAK_BATCH];
static unsigned nbatch;

static void leak_check(void)
{
	unsigned i;

	if (nbatch && __lsan_do_recoverable_leak_check()) {
		fprintf(stderr, "one of these inputs leaks memory (report "
				"above):\n");
		for (i = 0; i < nbatch; i++)
			fprintf(stderr, "  %s\n", batch[i]);
		exit(1);
	}
	for (i = 0; i < nbatch; i++)
		free(batch[i]);
	nbatch = 0;
}
#endif

static void run_file(const char *path, off_t size)
{
	uint8_t *buf;
	FILE *f;

	buf = malloc(size ? (size_t)size : 1);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", path);
		exit(1);
	}
	f = fopen(path, "rb");
	if (!f || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "%s: cannot read: %s\n", path, strerror(errno));
		exit(1);
	}
	fclose(f);
	printf("replay %s (%lld bytes)\n", path, (long long)size);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, (size_t)size);
	free(buf);
#ifdef REPLAY_LSAN
	batch[nbatch] = strdup(path);
	if (!batch[nbatch])
		exit(1);
	if (++nbatch == LEAK_BATCH)
		leak_check();
#endif
	replayed++;
}

static void run_path(const char *path)
{
	struct dirent **ents;
	struct stat st;
	char *sub;
	int n, i;

	if (stat(path, &st) < 0) {
		printf("skip %s (%s)\n", path, strerror(errno));
		return;
	}
	if (S_ISREG(st.st_mode)) {
		run_file(path, st.st_size);
		return;
	}
	if (!S_ISDIR(st.st_mode))
		return;
	n = scandir(path, &ents, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "%s: cannot list: %s\n", path, strerror(errno));
		exit(1);
	}
	for (i = 0; i < n; i++) {
		if (strcmp(ents[i]->d_name, ".") != 0 &&
		    strcmp(ents[i]->d_name, "..") != 0) {
			if (asprintf(&sub, "%s/%s", path, ents[i]->d_name) < 0)
				exit(1);
			run_path(sub);
			free(sub);
		}
		free(ents[i]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	glob_t g;
	size_t k;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strpbrk(argv[i], "*?[")) {
			run_path(argv[i]);
			continue;
		}
		if (glob(argv[i], 0, NULL, &g) != 0) {
			printf("skip %s (no match)\n", argv[i]);
			continue;
		}
		for (k = 0; k < g.gl_pathc; k++)
			run_path(g.gl_pathv[k]);
		globfree(&g);
	}
#ifdef REPLAY_LSAN
	leak_check();
#endif
	printf("%llu inputs replayed without a failure, %llu trees walked\n",
	       replayed, tfs_fuzz_walked);
	return 0;
}
