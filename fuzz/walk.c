// SPDX-License-Identifier: MIT
/*
 * The tree walk every fuzz target runs after a successful load.
 *
 * A reader that loads garbage without crashing can still hand the daemon a
 * tree that breaks it later: a tensor extent past the end of the mapping, a
 * name with a '/' that escapes its directory, children out of order so that
 * lookup (a binary search) misses, a broken parent link that makes ".."
 * loop.  So after every successful load we walk the whole tree the way the
 * daemon would (resolve every path, read the first and last byte of every
 * file, list every xattr) and check the contract of src/core/tree.h
 * and the builder's naming rules.  A violation abort()s, which libFuzzer
 * reports as a crash with the input that caused it.
 *
 * The checks deliberately re-derive everything from the raw arrays instead
 * of trusting one tree helper to validate another: e.g. a tensor's path is
 * compared with the path rebuilt from parent links, not only resolved.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/checked.h"
#include "views/export.h"
#include "core/view_ops.h"
#include "fuzz.h"
#include "core/names.h"
#include "core/text.h"
#include "core/values.h"

#define META_DIR ".tensorfs"

/* defeats the optimiser: every byte we "read" is folded in here */
static volatile uint8_t sink;

unsigned long long tfs_fuzz_walked;

void tfs_fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("tensorfs fuzz: invariant violated: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void tfs_fuzz_check_refusal(int ret, const struct tfs_diag *d)
{
	if (ret >= 0)
		tfs_fuzz_fail("load failed with non-negative code %d", ret);
	if (!d->msg[0])
		tfs_fuzz_fail("load refused (%s) without a diagnostic message",
			      strerror(-ret));
	/* the message reaches a terminal: one printable line */
	if (!tfs_text_is_safe(d->msg, strlen(d->msg)))
		tfs_fuzz_fail("refusal message is not one printable line");
	if ((ret == -EBADMSG || ret == -E2BIG) && !d->has_offset)
		tfs_fuzz_fail("malformed input refused without a byte offset: "
			      "%s",
			      d->msg);
}

static void touch(const void *p, size_t len)
{
	const volatile uint8_t *b = p;

	if (!len)
		return;
	sink ^= b[0];
	sink ^= b[len - 1];
}

/* one path component as the builder must produce it (docs/tree.md) */
static void check_name(const char *name, uint32_t node)
{
	size_t len = strlen(name);

	if (len == 0)
		tfs_fuzz_fail("node %u: empty name", node);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		tfs_fuzz_fail("node %u: name '%s'", node, name);
	if (strchr(name, '/'))
		tfs_fuzz_fail("node %u: name '%s' contains '/'", node, name);
	if (len > TFS_NAME_MAX)
		tfs_fuzz_fail("node %u: name is %zu bytes, above %d", node, len,
			      TFS_NAME_MAX);
	if (!tfs_utf8_valid((const unsigned char *)name, len))
		tfs_fuzz_fail("node %u: name is not valid UTF-8", node);
}

/* node kinds, names, parent links, and each directory's child list */
/*
 * The lazy directory's reserved slots it did not use (tree.h: after it
 * was made, as tfs_fuzz_walk makes it first): in no listing, never given
 * out
 */
static bool unused_slot(const struct tfs_tree *t, uint32_t i)
{
	const struct tfs_lazy_dir *ld = t->lazy_dir;

	return ld && i >= ld->first + t->nodes[ld->dir].nchildren &&
	       i - ld->first < ld->cap;
}

static void check_nodes(const struct tfs_tree *t)
{
	uint32_t *seen, i, k, c, nsub, prev;
	const struct tfs_node *n;

	if (!t->nodes || t->nnodes == 0)
		tfs_fuzz_fail("tree without nodes");
	n = &t->nodes[TFS_ROOT_NODE];
	if (n->kind != TFS_NODE_DIR || !n->name || n->name[0] ||
	    n->parent != TFS_ROOT_NODE)
		tfs_fuzz_fail("root: not an unnamed directory that is its own "
			      "parent");
	if (t->nnodes > 1 && !t->children)
		tfs_fuzz_fail("tree without a children array");
	seen = calloc(t->nnodes, sizeof(*seen));
	if (!seen)
		abort();
	for (i = 0; i < t->nnodes; i++) {
		n = &t->nodes[i];
		if (unused_slot(t, i))
			continue;
		if (!n->name)
			tfs_fuzz_fail("node %u: no name", i);
		if (i != TFS_ROOT_NODE) {
			check_name(n->name, i);
			if (n->parent >= t->nnodes || n->parent == i ||
			    t->nodes[n->parent].kind != TFS_NODE_DIR)
				tfs_fuzz_fail("node %u '%s': bad parent %u", i,
					      n->name, n->parent);
		}
		if (n->kind == TFS_NODE_TENSOR &&
		    (n->tensor >= t->ntensors ||
		     t->tensors[n->tensor].node != i))
			tfs_fuzz_fail("node %u '%s': tensor record %u does "
				      "not point back",
				      i, n->name, n->tensor);
		if (n->kind == TFS_NODE_MEMFILE && !n->lazy && n->mem_len &&
		    !n->mem)
			tfs_fuzz_fail("node %u '%s': memory file without "
				      "contents",
				      i, n->name);
		if (n->kind != TFS_NODE_DIR) {
			if (n->nchildren)
				tfs_fuzz_fail("node %u '%s': a file with "
					      "children",
					      i, n->name);
			continue;
		}
		/* children live in children[0 .. nnodes - 1) */
		if (!tfs_range_ok(n->first_child, n->nchildren, t->nnodes - 1))
			tfs_fuzz_fail("node %u '%s': children [%u, +%u) out "
				      "of range",
				      i, n->name, n->first_child, n->nchildren);
		nsub = 0;
		prev = TFS_NO_NODE;
		for (k = 0; k < n->nchildren; k++) {
			c = t->children[n->first_child + k];
			if (c == TFS_ROOT_NODE || c >= t->nnodes)
				tfs_fuzz_fail("node %u '%s': child %u invalid",
					      i, n->name, c);
			if (t->nodes[c].parent != i)
				tfs_fuzz_fail("node %u '%s': child %u has "
					      "parent %u",
					      i, n->name, c,
					      t->nodes[c].parent);
			if (prev != TFS_NO_NODE &&
			    strcmp(t->nodes[prev].name, t->nodes[c].name) >= 0)
				tfs_fuzz_fail("dir '%s': children '%s', '%s' "
					      "not strictly sorted",
					      n->name, t->nodes[prev].name,
					      t->nodes[c].name);
			if (tfs_tree_lookup(t, i, t->nodes[c].name,
					    strlen(t->nodes[c].name)) != c)
				tfs_fuzz_fail("dir '%s': lookup of '%s' misses",
					      n->name, t->nodes[c].name);
			if (t->nodes[c].kind == TFS_NODE_DIR)
				nsub++;
			seen[c]++;
			prev = c;
		}
		if (nsub != n->nsubdirs)
			tfs_fuzz_fail("dir '%s': nsubdirs %u, counted %u",
				      n->name, n->nsubdirs, nsub);
	}
	/* every node but the root is listed exactly once, under its parent */
	for (i = 1; i < t->nnodes; i++)
		if (seen[i] != 1 && !unused_slot(t, i))
			tfs_fuzz_fail("node %u '%s': listed %u times", i,
				      t->nodes[i].name, seen[i]);
	free(seen);
	/* parent links reach the root: no cycle, nothing detached */
	for (i = 1; i < t->nnodes; i++) {
		c = i;
		for (k = 0; c != TFS_ROOT_NODE; k++) {
			if (k >= t->nnodes)
				tfs_fuzz_fail("node %u '%s': parent links loop",
					      i, t->nodes[i].name);
			c = t->nodes[c].parent;
		}
	}
}

/* "a/b/c" rebuilt from parent links, malloc'd */
static char *node_path(const struct tfs_tree *t, uint32_t node)
{
	size_t len = 0, o;
	uint32_t c;
	char *p;

	for (c = node; c != TFS_ROOT_NODE; c = t->nodes[c].parent)
		len += strlen(t->nodes[c].name) + 1;
	p = malloc(len + 1);
	if (!p)
		abort();
	o = len ? len - 1 : 0;
	p[o] = '\0';
	for (c = node; c != TFS_ROOT_NODE; c = t->nodes[c].parent) {
		size_t l = strlen(t->nodes[c].name);

		o -= l;
		memcpy(p + o, t->nodes[c].name, l);
		if (o)
			p[--o] = '/';
	}
	return p;
}

/* every tensor record: its node, path, extent, sizes, group */
static void check_tensors(const struct tfs_tree *t, uint64_t input_size)
{
	uint64_t total = 0, count, bytes;
	const struct tfs_tensor *x;
	uint32_t i;
	char *p;

	if (t->ntensors && !t->tensors)
		tfs_fuzz_fail("tensors without records");
	for (i = 0; i < t->ntensors; i++) {
		x = &t->tensors[i];
		if (x->node >= t->nnodes ||
		    t->nodes[x->node].kind != TFS_NODE_TENSOR ||
		    t->nodes[x->node].tensor != i)
			tfs_fuzz_fail("tensor %u: node %u does not point back",
				      i, x->node);
		if (!x->path)
			tfs_fuzz_fail("tensor %u: no path", i);
		if (tfs_tree_resolve(t, x->path) != x->node)
			tfs_fuzz_fail("tensor %u: path '%s' does not resolve "
				      "to its node %u",
				      i, x->path, x->node);
		p = node_path(t, x->node);
		if (strcmp(p, x->path) != 0)
			tfs_fuzz_fail("tensor %u: path '%s', but its node is "
				      "at '%s'",
				      i, x->path, p);
		free(p);
		if (x->name_len && !x->name)
			tfs_fuzz_fail("tensor %u: no stored name", i);
		if (!x->dtype)
			tfs_fuzz_fail("tensor '%s': no dtype", x->path);
		if (x->ndim && !x->shape)
			tfs_fuzz_fail("tensor '%s': no shape", x->path);
		if (!tfs_range_ok(x->offset, x->stored_length, input_size))
			tfs_fuzz_fail("tensor '%s': extent [%llu, +%llu) "
				      "outside the %llu-byte input",
				      x->path, (unsigned long long)x->offset,
				      (unsigned long long)x->stored_length,
				      (unsigned long long)input_size);
		if (x->encoding == TFS_ENCODING_RAW && !x->unreadable &&
		    x->size != x->stored_length)
			tfs_fuzz_fail("tensor '%s': raw, size %llu but stored "
				      "length %llu",
				      x->path, (unsigned long long)x->size,
				      (unsigned long long)x->stored_length);
		if (tfs_dtype_info(x->dtype_id)->block_elems &&
		    (!tfs_shape_product(x->shape, x->ndim, &count) ||
		     tfs_dtype_bytes(x->dtype_id, count, &bytes) ||
		     bytes != x->size))
			tfs_fuzz_fail("tensor '%s': size %llu does not match "
				      "its shape and dtype %s",
				      x->path, (unsigned long long)x->size,
				      x->dtype);
		if (x->group == TFS_NO_NODE) {
			if (x->role)
				tfs_fuzz_fail("tensor '%s': a role outside a "
					      "group",
					      x->path);
		} else if (x->group >= t->nnodes ||
			   t->nodes[x->group].kind != TFS_NODE_DIR ||
			   t->nodes[x->node].parent != x->group || !x->role ||
			   strcmp(x->role, t->nodes[x->node].name) != 0) {
			tfs_fuzz_fail("tensor '%s': inconsistent group %u / "
				      "role",
				      x->path, x->group);
		}
		total += x->size;
	}
	if (total != t->total_bytes)
		tfs_fuzz_fail("total_bytes %llu, sum of sizes %llu",
			      (unsigned long long)t->total_bytes,
			      (unsigned long long)total);
}

/*
 * What the daemon answers (stored and made xattrs): listxattr's names are
 * strictly sorted, each gettable; a tensor file has its dtype and shape.
 */
static void check_listed(const struct tfs_tree *t, uint32_t i)
{
	static char names[1 << 16], value[1 << 16];
	const struct tfs_node *n = &t->nodes[i];
	const char *name, *prev = NULL;
	size_t plen = strlen(TFS_XATTR_PREFIX);
	ssize_t len, vlen;
	unsigned seen = 0;

	len = tfs_tree_listxattr(t, i, NULL, 0);
	if (len < 0 || len > (ssize_t)sizeof(names) ||
	    tfs_tree_listxattr(t, i, names, sizeof(names)) != len ||
	    (len && names[len - 1]))
		tfs_fuzz_fail("node '%s': listxattr gives %zd", n->name, len);
	for (name = names; name < names + len; name += strlen(name) + 1) {
		if (strncmp(name, TFS_XATTR_PREFIX, plen) || !name[plen])
			tfs_fuzz_fail("node '%s': xattr '%s' badly named",
				      n->name, name);
		if (prev && strcmp(prev, name) >= 0)
			tfs_fuzz_fail("node '%s': listed '%s', '%s' not "
				      "strictly sorted",
				      n->name, prev, name);
		vlen = tfs_tree_getxattr(t, i, name, NULL, 0);
		if (vlen < 0 || (vlen <= (ssize_t)sizeof(value) &&
				 tfs_tree_getxattr(t, i, name, value,
						   sizeof(value)) != vlen))
			tfs_fuzz_fail("node '%s': listed xattr '%s' not "
				      "gettable",
				      n->name, name);
		seen += !strcmp(name, TFS_XATTR_PREFIX "dtype") +
			!strcmp(name, TFS_XATTR_PREFIX "shape");
		prev = name;
	}
	if (n->kind == TFS_NODE_TENSOR && seen != 2)
		tfs_fuzz_fail("node '%s': a tensor file without its dtype and "
			      "shape",
			      n->name);
}

/* the daemon's listxattr and getxattr on every node */
static void check_xattrs(const struct tfs_tree *t)
{
	const struct tfs_xattr *xa;
	const struct tfs_node *n;
	size_t o, l, plen = strlen(TFS_XATTR_PREFIX);
	uint32_t i, k, listed;

	for (i = 0; i < t->nnodes; i++) {
		n = &t->nodes[i];
		if (n->nxattrs && !n->xattrs)
			tfs_fuzz_fail("node '%s': xattrs missing", n->name);
		for (k = 0; k < n->nxattrs; k++) {
			xa = &n->xattrs[k];
			if (!xa->name ||
			    strncmp(xa->name, TFS_XATTR_PREFIX, plen) != 0 ||
			    !xa->name[plen])
				tfs_fuzz_fail("node '%s': xattr %u badly named",
					      n->name, k);
			if (k && strcmp(n->xattrs[k - 1].name, xa->name) >= 0)
				tfs_fuzz_fail("node '%s': xattrs '%s', '%s' "
					      "not strictly sorted",
					      n->name, n->xattrs[k - 1].name,
					      xa->name);
			if (xa->len && !xa->value)
				tfs_fuzz_fail("node '%s': xattr '%s' has no "
					      "value",
					      n->name, xa->name);
			touch(xa->value, xa->len);
		}
		/* listxattr: NUL-separated names, each one gettable */
		listed = 0;
		for (o = 0; o < n->xattr_names_len; o += l + 1) {
			l = strnlen(tfs_node_xattr_names(n) + o,
				    n->xattr_names_len - o);
			if (o + l >= n->xattr_names_len)
				tfs_fuzz_fail("node '%s': listxattr buffer not "
					      "NUL-terminated",
					      n->name);
			xa = tfs_tree_xattr(t, i, tfs_node_xattr_names(n) + o);
			if (!xa || xa != &n->xattrs[listed])
				tfs_fuzz_fail("node '%s': listed xattr '%s' "
					      "not found in order",
					      n->name,
					      tfs_node_xattr_names(n) + o);
			listed++;
		}
		if (listed != n->nxattrs)
			tfs_fuzz_fail("node '%s': %u xattrs listed of %u",
				      n->name, listed, n->nxattrs);
		check_listed(t, i);
	}
}

/*
 * Encoded tensors bigger than this are read at their first byte only and
 * not verified: a few bytes of zstd may legitimately expand to gigabytes,
 * and decoding them all would only make the fuzzer report a slow input.
 */
#define FUZZ_DECODE_MAX (16ull << 20)

/* read one byte at @off of regular file @node; returns the read's result */
static int read_byte(struct tfs_image *img, uint32_t node, uint64_t off,
		     bool must_succeed)
{
	const struct tfs_tree *t = img->tree;
	const uint8_t *base = img->srcs[0].data;
	const struct tfs_node *n = &t->nodes[node];
	struct tfs_view v;
	int ret;

	ret = tfs_image_read(img, node, off, 1, &v);
	if (ret > 0 || (ret < 0 && must_succeed))
		tfs_fuzz_fail("'%s': read at %llu returned %d", n->name,
			      (unsigned long long)off, ret);
	if (ret == 0) {
		if (v.len != 1 || !v.data)
			tfs_fuzz_fail("'%s': one-byte read at %llu gave %zu "
				      "bytes",
				      n->name, (unsigned long long)off, v.len);
		/* raw tensor bytes are served from the input, in range
		 * (bytes a reader converted into memory: not checked) */
		if (n->kind == TFS_NODE_TENSOR &&
		    t->tensors[n->tensor].encoding == TFS_ENCODING_RAW &&
		    !t->tensors[n->tensor].nsegs &&
		    (!base || (const uint8_t *)v.data < base ||
		     (const uint8_t *)v.data >= base + img->srcs[0].size))
			tfs_fuzz_fail("'%s': raw read not served from the "
				      "input",
				      n->name);
		touch(v.data, v.len);
	}
	tfs_view_release(img, &v);
	return ret;
}

/*
 * `tensorfs verify` on tensor @idx; returns its result.  A raw tensor
 * whose first read failed (a digest mismatch gives -EIO from then on) must
 * fail verification with a mismatch, and the other way round.
 */
static int check_verify(struct tfs_image *img, uint32_t idx, int first_read)
{
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	struct tfs_check_result r;
	int ret;

	ret = tfs_image_check_tensor(img, idx, &r, NULL, NULL);
	if (ret != r.err || ret > 0)
		tfs_fuzz_fail("'%s': verify returned %d, result %d", x->path,
			      ret, r.err);
	if (ret == -EBADMSG && !r.msg[0])
		tfs_fuzz_fail("'%s': verify failed without a message", x->path);
	/* bytes the reader refused to serve: failed or skipped, said why */
	if (x->unreadable) {
		if (r.skipped == x->unreadable_is_fault ||
		    ret != (x->unreadable_is_fault ? -EBADMSG : 0) ||
		    (x->size && first_read != -EIO) || !r.msg[0])
			tfs_fuzz_fail("'%s': unreadable (%s), but read %d, "
				      "verify %d%s",
				      x->path, x->unreadable, first_read, ret,
				      r.skipped ? " (skipped)" : "");
		return ret;
	}
	if (r.skipped)
		tfs_fuzz_fail("'%s': verify skipped a readable file", x->path);
	if (x->encoding == TFS_ENCODING_RAW && x->size &&
	    (first_read == -EIO) != (ret == -EBADMSG))
		tfs_fuzz_fail("'%s': the first read returned %d but verify "
			      "%d (%s)",
			      x->path, first_read, ret, r.msg);
	return ret;
}

/*
 * The first and last element values of a tensor (values.h), as stats and
 * -o as=float32 decode them: 0, or -EIO when its bytes fail a check.
 */
static void check_values(struct tfs_image *img, uint32_t tensor)
{
	const struct tfs_tensor *x = &img->tree->tensors[tensor];
	uint64_t n = tfs_values_count(img->tree, tensor);
	double v[2] = {0, 0};
	int ret;

	if (!n || tfs_values_supported(x->dtype_id, tfs_values_tensor_flags(
							    img->tree, tensor)))
		return;
	ret = tfs_values_read(img, tensor, 0, 0, 1, &v[0]);
	if (!ret)
		ret = tfs_values_read(img, tensor, 0, n - 1, 1, &v[1]);
	if (ret && ret != -EIO)
		tfs_fuzz_fail("'%s': values read returned %d", x->path, ret);
	sink ^= (uint8_t)(v[0] == v[1]);
}

/*
 * The first and last byte of every file, as the daemon reads them, then
 * verification of every tensor; directories refuse reads.
 */
static void check_reads(struct tfs_image *img)
{
	const struct tfs_tree *t = img->tree;
	const struct tfs_tensor *x;
	const struct tfs_node *n;
	struct tfs_view v;
	uint64_t size;
	uint32_t i;
	int first, ret;
	bool must, encoded;

	for (i = 0; i < t->nnodes; i++) {
		n = &t->nodes[i];
		if (unused_slot(t, i))
			continue;
		if (n->kind == TFS_NODE_DIR) {
			ret = tfs_image_read(img, i, 0, 1, &v);
			if (ret != -EISDIR)
				tfs_fuzz_fail("dir '%s': read returned %d",
					      n->name, ret);
			tfs_view_release(img, &v);
			continue;
		}
		size = tfs_node_size(t, i);
		x = n->kind == TFS_NODE_TENSOR ? &t->tensors[n->tensor] : NULL;
		encoded = x && x->encoding != TFS_ENCODING_RAW;
		/*
		 * Memory files and raw tensors without a digest always read;
		 * a digest mismatch or bad zstd data fails with an errno.
		 * The export holds every tensor's bytes: it may fail as they
		 * do (-EIO).
		 */
		must = (!x &&
			!(n->kind == TFS_NODE_VIEW &&
			  !strcmp(tfs_view_kinds[n->view]->name, "export"))) ||
		       (x && !encoded && !x->digest && !x->unreadable);
		first = 0;
		if (size) {
			first = read_byte(img, i, 0, must);
			if (!encoded && first && first != -EIO)
				tfs_fuzz_fail("'%s': read returned %d, not 0 "
					      "or -EIO",
					      n->name, first);
			if (!encoded || size <= FUZZ_DECODE_MAX) {
				ret = read_byte(img, i, size - 1, must);
				if (first == -EIO && ret != -EIO)
					tfs_fuzz_fail("'%s': read failed with "
						      "-EIO, then returned %d",
						      n->name, ret);
			}
		}
		/* at or past the end: an empty view */
		ret = tfs_image_read(img, i, size, 1, &v);
		if (ret > 0 || (ret == 0 && v.len) || (ret < 0 && must))
			tfs_fuzz_fail("'%s': read at EOF returned %d, %zu "
				      "bytes",
				      n->name, ret, v.len);
		tfs_view_release(img, &v);
		if (x && (!encoded || size <= FUZZ_DECODE_MAX)) {
			check_verify(img, n->tensor, first);
			check_values(img, n->tensor);
		}
	}
}

/* .tensorfs/{manifest,metadata}.json are made by the builder: valid JSON */
static void check_meta_json(struct tfs_image *img)
{
	static const char *const files[] = {"manifest.json", "metadata.json"};
	const struct tfs_tree *t = img->tree;
	uint32_t dir, node;
	json_error_t err;
	json_t *j;
	size_t i;

	dir = tfs_tree_lookup(t, TFS_ROOT_NODE, META_DIR, strlen(META_DIR));
	if (dir == TFS_NO_NODE)
		tfs_fuzz_fail("no " META_DIR " directory");
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		node = tfs_tree_lookup(t, dir, files[i], strlen(files[i]));
		if (node == TFS_NO_NODE)
			tfs_fuzz_fail("no " META_DIR "/%s", files[i]);
		if (t->nodes[node].kind != TFS_NODE_MEMFILE)
			tfs_fuzz_fail(META_DIR "/%s: not a memory file",
				      files[i]);
		/* a lazy file (manifest.json, a large metadata.json) is made
		 * by asking its size */
		tfs_node_size(t, node);
		/* names are arbitrary bytes: "\u0000" is valid JSON */
		j = json_loadb(t->nodes[node].mem, t->nodes[node].mem_len,
			       JSON_ALLOW_NUL, &err);
		/*
		 * A stored key may hold NUL too ("\u0000", valid JSON), which
		 * jansson's reader refuses in object keys whatever the flags:
		 * its limit, not ours (a safetensors __metadata__ key, found by
		 * scripts/fuzz safetensors)
		 */
		if (!j && strstr(err.text, "NUL byte in object key"))
			continue;
		if (!j)
			tfs_fuzz_fail(META_DIR "/%s: invalid JSON: %s",
				      files[i], err.text);
		json_decref(j);
	}
}

/*
 * .tensorfs/export/: each file's header is its 8-byte length (a multiple
 * of 8) and a JSON object with __metadata__, and its size the header's
 * plus its tensors' bytes, contiguous from 0 (export.h)
 */
static void check_export(struct tfs_image *img)
{
	const struct tfs_export *e = img->tree->export;
	const struct tfs_export_file *f;
	struct tfs_view v;
	json_error_t err;
	uint64_t n, at;
	uint32_t i, k;
	json_t *j;

	if (!e || !e->nfiles)
		tfs_fuzz_fail("no export");
	for (i = 0; i < e->nfiles; i++) {
		f = &e->files[i];
		/* the header is made when first read */
		if (tfs_export_read(img, e, i, 0, 1, &v) && !f->head)
			tfs_fuzz_fail("export %s: header not made", f->name);
		tfs_view_release(img, &v);
		if (!f->head)
			tfs_fuzz_fail("export %s: no header after a read",
				      f->name);
		for (n = 0, k = 0; k < 8; k++)
			n |= (uint64_t)(uint8_t)f->head[k] << (8 * k);
		if (n % 8 || n + 8 != f->head_len)
			tfs_fuzz_fail("export %s: header length %llu", f->name,
				      (unsigned long long)n);
		j = json_loadb(f->head + 8, n, JSON_ALLOW_NUL, &err);
		/* jansson takes no NUL in a key; a name may hold one */
		if (!json_is_object(json_object_get(j, "__metadata__")) &&
		    (j || !strstr(err.text, "NUL")))
			tfs_fuzz_fail("export %s: header not JSON with "
				      "__metadata__: %s",
				      f->name, j ? "" : err.text);
		json_decref(j);
		for (at = 0, k = 0; k < f->n; k++) {
			if (e->items[f->first + k].begin != at)
				tfs_fuzz_fail("export %s: a gap", f->name);
			at += e->items[f->first + k].size;
		}
		if (f->head_len + at != f->size)
			tfs_fuzz_fail("export %s: size", f->name);
	}
}

void tfs_fuzz_walk(struct tfs_image *img, const char *format, uint64_t size)
{
	const struct tfs_tree *t = img->tree;

	if (!t)
		tfs_fuzz_fail("loaded image without a tree");
	if (!t->format || strcmp(t->format, format) != 0)
		tfs_fuzz_fail("tree format '%s', loaded by '%s'",
			      t->format ? t->format : "(null)", format);
	/*
	 * the export's plan, made when first looked in (tree.h); sizes past
	 * 2^64 or no memory leave the directory empty
	 */
	if (t->lazy_dir && !tfs_tree_export(t) &&
	    (t->lazy_dir->err >= 0 ||
	     t->nodes[t->lazy_dir->dir].nchildren))
		tfs_fuzz_fail("export: no plan, but %d and %u files",
			      t->lazy_dir->err,
			      t->nodes[t->lazy_dir->dir].nchildren);
	for (uint32_t i = 0; i < t->nwarnings; i++)
		if (!tfs_text_is_safe(t->warnings[i].msg,
				      strlen(t->warnings[i].msg)))
			tfs_fuzz_fail("warning %u is not one printable line",
				      i);
	check_nodes(t);
	check_tensors(t, size);
	check_xattrs(t);
	check_reads(img);
	check_meta_json(img);
	if (!t->lazy_dir || t->export)
		check_export(img);
	tfs_fuzz_walked++;
}
