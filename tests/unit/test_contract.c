// SPDX-License-Identifier: MIT
/*
 * The contract every registered format keeps (src/core/format.h,
 * docs/architecture.md), checked over every valid fixture whatever its
 * reader, so a new reader is held to it without a line of its own:
 *   - a valid fixture loads, and every file of its tree reads whole;
 *   - prefixes of it (a spread, and the last bytes one by one; each in a
 *     buffer of exactly that size, so a sanitizer sees any read past it;
 *     every prefix of each format's own fixtures is its own suite's) load
 *     or are refused, never crash; a refusal is a
 *     negative errno with a message that is one printable line, and a
 *     malformed container's refusal names the byte offset;
 *   - every reader, given an empty or a one-byte container by force,
 *     refuses it the same way;
 *   - each registered reader loads at least one of the fixtures.
 * The project's fixtures (tests/fixtures/<fmt>/valid) are always there;
 * the shared ones (../shared/fixtures) are walked too when present.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/format.h"
#include "core/image.h"
#include "core/text.h"
#include "testutil.h"

#define SHARED_MAX (256u << 10) /* shared fixtures above this: skipped */

static unsigned loaded_by[256];
static unsigned nfiles, nprefixes;

static unsigned format_index(const struct tfs_format *f)
{
	unsigned i;

	for (i = 0; tfs_formats[i]; i++)
		if (tfs_formats[i] == f)
			return i;
	return 0;
}

static void check_refusal(const char *what, int ret, const struct tfs_diag *d)
{
	ck_assert_msg(ret < 0, "%s: refused with %d", what, ret);
	ck_assert_msg(d->msg[0], "%s: refused (%d) without a message", what,
		      ret);
	ck_assert_msg(tfs_text_is_safe(d->msg, strlen(d->msg)),
		      "%s: message is not one printable line: %s", what,
		      d->msg);
	if (ret == -EBADMSG || ret == -E2BIG)
		ck_assert_msg(d->has_offset, "%s: '%s' names no byte offset",
			      what, d->msg);
}

/*
 * every file of the tree reads whole (@must) or fails cleanly; @limit: the
 * bytes of each file read at most
 */
static void read_all(struct tfs_image *img, bool must, uint64_t limit)
{
	struct tfs_view v;
	uint64_t off, size;
	size_t got;
	uint32_t n;
	int ret;

	for (n = 0; n < img->tree->nnodes; n++) {
		if (img->tree->nodes[n].kind == TFS_NODE_DIR)
			continue;
		size = tfs_node_size(img->tree, n);
		if (size > limit)
			size = limit;
		for (off = 0; off < size; off += got) {
			ret = tfs_image_read(img, n, off, 1 << 20, &v);
			if (ret || !v.len) {
				/* an unreadable file, or a truncated one */
				ck_assert_msg(
					!must || img->tree->nodes[n].kind !=
							 TFS_NODE_MEMFILE,
					"node %u: read failed: %d", n, ret);
				break;
			}
			got = v.len;
			tfs_view_release(img, &v);
		}
	}
}

static void load_prefix(const char *path, const uint8_t *b, size_t cut)
{
	uint8_t *p = malloc(cut ? cut : 1);
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	char what[512];
	int ret;

	ck_assert_ptr_nonnull(p);
	memcpy(p, b, cut);
	ret = tu_load_mem(p, cut, &img, &d);
	snprintf(what, sizeof(what), "%s cut at %zu", path, cut);
	if (ret)
		check_refusal(what, ret, &d);
	else
		read_all(img, false, 4096);
	tfs_image_close(img);
	free(p);
	nprefixes++;
}

static void contract(const char *path, bool shared)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	size_t len, cut, step, n;
	uint8_t *b = tu_read_file(path, &len);
	int ret;

	if (shared && len > SHARED_MAX) {
		free(b);
		return;
	}
	ret = tu_load_mem(b, len, &img, &d);
	if (ret) { /* a shared fixture that is a reject, or needs its
		      directory; a parser's input (pickle, zip) that is no
		      container: not this suite's to judge */
		ck_assert_msg(shared || ret == -ENOEXEC,
			      "%s: valid fixture refused: %s", path, d.msg);
		check_refusal(path, ret, &d);
		free(b);
		return;
	}
	loaded_by[format_index(img->format)]++;
	read_all(img, true, UINT64_MAX);
	tfs_image_close(img);
	nfiles++;
	n = shared ? 24 : 64;
	step = len <= n ? 1 : len / n;
	for (cut = 0; cut < len; cut += step)
		load_prefix(path, b, cut);
	/* the last bytes, one at a time: footers and trailing fields */
	for (cut = len > 16 ? len - 16 : 0; cut < len; cut++)
		load_prefix(path, b, cut);
	free(b);
}

/* the regular files under @dir, recursively, valid ones only if @valid */
static void walk(const char *dir, bool shared, int depth)
{
	struct dirent **ents;
	char p[4096];
	struct stat st;
	int i, n;

	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return;
	for (i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;

		snprintf(p, sizeof(p), "%s/%s", dir, nm);
		if (nm[0] == '.' || stat(p, &st) != 0) {
			free(ents[i]);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			/* only valid/ (and what is below it) at depth >= 1;
			 * the shared tree keeps valid files in other dirs */
			if (depth < 4 &&
			    (shared || depth == 0 || strcmp(nm, "valid") == 0))
				walk(p, shared, depth + 1);
		} else if (S_ISREG(st.st_mode) && (shared || depth >= 2) &&
			   !strstr(nm, ".py") && !strstr(nm, ".json") &&
			   !strstr(nm, ".md") && !strstr(nm, ".tsv") &&
			   strcmp(nm, "LICENSE") != 0) {
			contract(p, shared);
		}
		free(ents[i]);
	}
	free(ents);
}

START_TEST(every_fixture_keeps_the_contract)
{
	const char *shared = getenv("TFS_FIXTURES");
	struct stat st;
	unsigned i, missing = 0;

	walk(tu_testdata(""), false, 0);
	if (shared && stat(shared, &st) == 0 && S_ISDIR(st.st_mode))
		walk(shared, true, 0);
	else
		shared = NULL;
	printf("contract: %u fixtures, %u prefixes\n", nfiles, nprefixes);
	for (i = 0; tfs_formats[i]; i++) {
		printf("contract: %-12s %u fixtures\n", tfs_formats[i]->name,
		       loaded_by[i]);
		/* the shared fixtures cover the readers without their own */
		if (!loaded_by[i] && shared)
			missing++;
	}
	ck_assert_msg(!missing, "%u readers loaded no fixture", missing);
}
END_TEST

START_TEST(every_reader_refuses_nothing)
{
	static const uint8_t one[1] = {0};
	struct tfs_image *img = NULL;
	struct tfs_source src;
	struct tfs_diag d;
	char what[128];
	unsigned i;
	int ret;

	for (i = 0; tfs_formats[i]; i++) {
		/* no probe was asked: the reader's load() itself refuses */
		tfs_source_init_memory(&src, NULL, 0);
		ret = tfs_image_load_format(&img, &src, tfs_formats[i], NULL,
					    &d);
		snprintf(what, sizeof(what), "%s, empty", tfs_formats[i]->name);
		if (ret)
			check_refusal(what, ret, &d);
		tfs_image_close(img);
		img = NULL;
		tfs_source_init_memory(&src, one, sizeof(one));
		ret = tfs_image_load_format(&img, &src, tfs_formats[i], NULL,
					    &d);
		snprintf(what, sizeof(what), "%s, one byte",
			 tfs_formats[i]->name);
		if (ret)
			check_refusal(what, ret, &d);
		tfs_image_close(img);
		img = NULL;
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("contract");
	TCase *tc = tcase_create("contract");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, every_fixture_keeps_the_contract);
	tcase_add_test(tc, every_reader_refuses_nothing);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
