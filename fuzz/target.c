// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: one source, built once per format reader and once for
 * format detection (fuzz/meson.build).
 *
 * With TFS_FUZZ_FORMAT defined ("ztensor", "tsr", ...) the target forces
 * that reader: it calls the reader's probe and, when the probe claims the
 * input, loads it with that reader.  The probe gate keeps the contract of
 * format.h (load only runs on inputs its probe claimed); it costs the
 * fuzzer nothing, which learns the magic from the seeds and the dictionary.
 * When detection picks this reader too (nearly always) the load is
 * tfs_image_load() itself, so the files can be read through the image's
 * read path.  When another reader would win detection, the target still
 * forces this one (its load through a builder, then tfs_builder_finish, as
 * tfs_image_load does) and checks the tree without reading: only
 * tfs_image_load can set up the read state.
 *
 * Without it (the "detect" target) the input goes through tfs_image_load()
 * on a memory source: every probe of every reader, then whichever reader
 * wins.
 *
 * After a successful load the tree is walked and checked (fuzz/walk.c);
 * then it is loaded again with -o flat, which maps the same names to other
 * paths, and checked again.  A refusal must be a negative errno with a
 * message.  Anything else is a bug and abort()s.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/format.h"
#include "fuzz.h"

/*
 * Reads need the image's read state (decode cache, digest checks), which
 * only tfs_image_load() sets up; a small cache sends big zstd tensors
 * through the windowed decoder too.
 */
#define FUZZ_CACHE_SIZE (4ull << 20)

#ifdef TFS_FUZZ_FORMAT
static const struct tfs_format *forced_format(void)
{
	static const struct tfs_format *fmt;

	if (!fmt) {
		fmt = tfs_format_by_name(TFS_FUZZ_FORMAT);
		if (!fmt)
			tfs_fuzz_fail("no reader named '%s'", TFS_FUZZ_FORMAT);
	}
	return fmt;
}

/*
 * The forced reader's probe, load and tfs_builder_finish, as in
 * tfs_image_load() without detection.  The image has no read state (the
 * core has no public way to give it one), so it is only walked, not read.
 */
/*
 * Returns 1 when the probe does not claim the input, else 0 or the load's
 * -errno.  The forced reader loads it even when detection would pick
 * another one, and the walk reads every file like the daemon does.
 */
static int load(const uint8_t *data, size_t size,
		const struct tfs_build_options *opts, struct tfs_image **out,
		struct tfs_diag *d)
{
	const struct tfs_format *fmt = forced_format();
	struct tfs_source src;
	int conf;

	tfs_source_init_memory(&src, data, size);
	conf = fmt->probe(&src);
	if (conf < 0 || conf > 100)
		tfs_fuzz_fail("%s: probe answered %d, not 0..100", fmt->name,
			      conf);
	if (conf != fmt->probe(&src))
		tfs_fuzz_fail("%s: probe is not deterministic", fmt->name);
	if (conf == 0)
		return 1;
	return tfs_image_load_format(out, &src, fmt, opts, d);
}
#else
static int load(const uint8_t *data, size_t size,
		const struct tfs_build_options *opts, struct tfs_image **out,
		struct tfs_diag *d)
{
	struct tfs_source src;
	unsigned i;
	int conf;

	tfs_source_init_memory(&src, data, size);
	for (i = 0; tfs_formats[i]; i++) {
		conf = tfs_formats[i]->probe(&src);
		if (conf < 0 || conf > 100)
			tfs_fuzz_fail("%s: probe answered %d, not 0..100",
				      tfs_formats[i]->name, conf);
	}
	return tfs_image_load(out, &src, opts, d);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_image_options io = {.cache_size = FUZZ_CACHE_SIZE,
				       .verify = TFS_VERIFY_FIRST};
	struct tfs_build_options opts = {.flat = false};
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	int ret, pass;

	for (pass = 0; pass < 2; pass++) {
		opts.flat = pass == 1;
		tfs_diag_clear(&d);
		ret = load(data, size, &opts, &img, &d);
		if (ret == 1)
			return 0;
		if (ret) {
			tfs_fuzz_check_refusal(ret, &d);
			if (pass)
				tfs_fuzz_fail("refused with -o flat (%s) what "
					      "loaded without it",
					      d.msg);
			return 0;
		}
		if (tfs_image_configure(img, &io))
			tfs_fuzz_fail("tfs_image_configure refused a %llu-byte "
				      "cache",
				      (unsigned long long)io.cache_size);
		tfs_fuzz_walk(img, tfs_format_shown(img->format), size);
		tfs_image_close(img);
		img = NULL;
	}
	return 0;
}
