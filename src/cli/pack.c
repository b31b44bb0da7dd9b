// SPDX-License-Identifier: MIT
/*
 * tensorfs pack DIR DEST.safetensors: the reverse of a mount.  Every
 * regular file under DIR (but DIR/.tensorfs) is a tensor: its dtype and
 * shape from the user.tensorfs.dtype and user.tensorfs.shape xattrs (a
 * mount copied with cp -a or rsync -aX), or from its header when it is a
 * .npy file; its name from user.tensorfs.name, else its path joined with
 * '.'.  The header is written by the export's writer (export.h), sorted
 * by name, with the __metadata__ of DIR/.tensorfs/export/ when there is
 * one: so packing a copied mount gives its export byte for byte.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli/cli.h"
#include "formats/common/npy_header.h"
#include "lib/private.h"
#include "core/checked.h"
#include "core/dtype.h"
#include "views/export.h"
#include "core/names.h"

#define MAX_NDIM 64

struct pfile {
	char *path; /* under DIR */
	char *rel;  /* relative to DIR */
	char *name;
	size_t name_len;
	const char *dtype; /* safetensors name */
	uint64_t shape[MAX_NDIM];
	uint32_t ndim;
	uint64_t data_off, size;
	/* as the export view makes it: TFS_EXPORT_SWAP (per @unit bytes),
	 * TFS_EXPORT_TRANSPOSE (@elem bytes per element) */
	uint32_t how, unit, elem;
};

struct pack {
	const char *dir;
	struct pfile *v;
	size_t n, cap;
	char why[512]; /* the refusal, naming the file */
};

/* the value of xattr @name of @path, NUL-terminated (malloc'd), or NULL */
static char *xattr(const char *path, const char *name, size_t *len)
{
	ssize_t n = lgetxattr(path, name, NULL, 0);
	char *v;

	if (n < 0 || n > 65536)
		return NULL;
	v = malloc((size_t)n + 1);
	if (!v)
		return NULL;
	n = lgetxattr(path, name, v, (size_t)n);
	if (n < 0) {
		free(v);
		return NULL;
	}
	v[n] = '\0';
	if (len)
		*len = (size_t)n;
	return v;
}

/* "[2,3]" into @f */
static int parse_shape(const char *s, struct pfile *f)
{
	char *end;

	if (*s++ != '[')
		return -EINVAL;
	f->ndim = 0;
	if (*s == ']')
		return s[1] ? -EINVAL : 0;
	for (;;) {
		if (f->ndim == MAX_NDIM || *s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		f->shape[f->ndim++] = strtoull(s, &end, 10);
		if (errno)
			return -EINVAL;
		s = end;
		if (*s == ']')
			return s[1] ? -EINVAL : 0;
		if (*s++ != ',')
			return -EINVAL;
	}
}

static int refuse(struct pack *p, const char *rel, const char *fmt,
		  const char *a)
{
	char m[256];

	snprintf(m, sizeof(m), fmt, a);
	snprintf(p->why, sizeof(p->why), "%s: %s", rel, m);
	return -EINVAL;
}

/*
 * What the export view does with a tensor of @t that is big-endian (@big)
 * or column-major (@fortran), into @f (shape set): swap each element (each
 * half of a complex one), transpose to row-major.  NULL, or why the export
 * leaves such a tensor out.
 */
static const char *plan_convert(struct pfile *f, enum tfs_dtype t, bool big,
				bool fortran)
{
	const struct tfs_dtype_info *di = tfs_dtype_info(t);
	uint64_t n;

	if (big && di->block_bytes > 1 && di->packed)
		return "big-endian packed elements";
	if (big && di->block_bytes > 1) {
		f->how |= TFS_EXPORT_SWAP;
		f->unit = di->kind == TFS_KIND_COMPLEX ? di->block_bytes / 2
						       : di->block_bytes;
	}
	if (!fortran || f->ndim < 2 ||
	    !tfs_shape_product(f->shape, f->ndim, &n) || n < 2)
		return NULL;
	if (di->block_elems != 1)
		return "column-major packed elements";
	f->how |= TFS_EXPORT_TRANSPOSE;
	f->elem = di->block_bytes;
	return NULL;
}

/* a .npy file without tensorfs xattrs: its header */
static int take_npy(struct pack *p, const char *path, const char *rel,
		    struct pfile *f, uint64_t fsize)
{
	struct tfs_npy h = {0};
	const char *why;
	uint8_t buf[65536 + 16];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;
	uint32_t k;

	if (fd < 0)
		return refuse(p, rel, "%s", strerror(errno));
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return refuse(p, rel, "%s", strerror(errno));
	ret = tfs_npy_header_parse(buf, (uint64_t)n, &h);
	if (ret) {
		tfs_npy_header_free(&h);
		return refuse(p, rel, "%s", "not a .npy file tensorfs reads");
	}
	if (h.structured || h.ndim > MAX_NDIM ||
	    !tfs_export_dtype_name(h.dtype)) {
		ret = refuse(p, rel, "%s",
			     h.ndim > 64 ? "too many dimensions"
					 : "no safetensors dtype");
		tfs_npy_header_free(&h);
		return ret;
	}
	f->dtype = tfs_export_dtype_name(h.dtype);
	f->ndim = (uint32_t)h.ndim;
	for (k = 0; k < f->ndim; k++)
		f->shape[k] = h.shape[k];
	f->data_off = h.data_offset;
	f->size = h.nbytes;
	why = plan_convert(f, h.dtype, h.big_endian, h.fortran);
	tfs_npy_header_free(&h);
	if (why)
		return refuse(p, rel, "%s", why);
	if (f->data_off > fsize || fsize - f->data_off != f->size)
		return refuse(p, rel, "%s",
			      "size does not match the .npy header's dtype x "
			      "shape");
	return 0;
}

/* the name from the path: "a/b.npy" is "a.b" */
static int path_name(struct pfile *f, const char *rel, bool npy)
{
	size_t len = strlen(rel) - (npy ? 4 : 0), i;

	f->name = strndup(rel, len);
	if (!f->name)
		return -ENOMEM;
	for (i = 0; i < len; i++)
		if (f->name[i] == '/')
			f->name[i] = '.';
	f->name_len = len;
	return 0;
}

static int take_file(struct pack *p, const char *path, const char *rel,
		     uint64_t fsize)
{
	struct pfile f = {0};
	char *dt, *sh, *nm, *bo, *ord, *ro;
	const char *why;
	size_t nlen = 0;
	bool npy = strlen(rel) > 4 && !strcmp(rel + strlen(rel) - 4, ".npy");
	uint64_t count, bytes;
	enum tfs_dtype t;
	int ret = 0;

	dt = xattr(path, TFS_XATTR_PREFIX "dtype", NULL);
	sh = xattr(path, TFS_XATTR_PREFIX "shape", NULL);
	nm = xattr(path, TFS_XATTR_PREFIX "name", &nlen);
	ro = xattr(path, TFS_XATTR_PREFIX "role", NULL);
	if (ro) {
		/* a component of a group: named by its path, as exported */
		free(nm);
		nm = NULL;
	}
	bo = xattr(path, TFS_XATTR_PREFIX "byte_order", NULL);
	ord = xattr(path, TFS_XATTR_PREFIX "order", NULL);
	if (npy) {
		ret = take_npy(p, path, rel, &f, fsize);
	} else if (!dt || !sh) {
		ret = refuse(p, rel, "%s",
			     !dt ? "no user.tensorfs.dtype xattr (copy with "
				   "cp -a or rsync -aX)"
				 : "no user.tensorfs.shape xattr (copy with "
				   "cp -a or rsync -aX)");
	} else if (parse_shape(sh, &f)) {
		ret = refuse(p, rel, "user.tensorfs.shape %s is not [N,...]",
			     sh);
	} else {
		t = tfs_dtype_from_name(dt);
		f.dtype = tfs_export_dtype_name(t);
		if (!f.dtype)
			ret = refuse(p, rel,
				     "dtype %s has no safetensors dtype", dt);
		else if (!tfs_shape_product(f.shape, f.ndim, &count) ||
			 tfs_dtype_bytes(t, count, &bytes) || bytes != fsize)
			ret = refuse(p, rel, "%s",
				     "its size does not match "
				     "user.tensorfs.dtype x "
				     "user.tensorfs.shape");
		else if ((why = plan_convert(&f, t, bo && !strcmp(bo, "big"),
					     ord && !strcmp(ord, "F"))))
			ret = refuse(p, rel, "%s", why);
		f.size = fsize;
	}
	if (!ret && nm) {
		f.name = nm;
		f.name_len = nlen;
		nm = NULL;
	} else if (!ret) {
		ret = path_name(&f, rel, npy);
	}
	if (!ret && (!(f.path = strdup(path)) || !(f.rel = strdup(rel))))
		ret = -ENOMEM;
	if (!ret && p->n == p->cap) {
		struct pfile *nv = reallocarray(p->v, p->cap ? p->cap * 2 : 64,
						sizeof(*nv));

		if (!nv)
			ret = -ENOMEM;
		else {
			p->v = nv;
			p->cap = p->cap ? p->cap * 2 : 64;
		}
	}
	if (!ret)
		p->v[p->n++] = f;
	else {
		free(f.name);
		free(f.path);
		free(f.rel);
	}
	free(ro);
	free(dt);
	free(sh);
	free(nm);
	free(bo);
	free(ord);
	return ret;
}

/* every file under @path (relative @rel, "" at the top) */
static int walk(struct pack *p, const char *path, const char *rel)
{
	struct dirent **list = NULL;
	char *sub = NULL, *srel = NULL;
	struct stat st;
	int i, n, ret = 0;

	n = scandir(path, &list, NULL, alphasort);
	if (n < 0)
		return refuse(p, *rel ? rel : path, "%s", strerror(errno));
	for (i = 0; i < n; i++) {
		const char *nm = list[i]->d_name;

		if (ret || !strcmp(nm, ".") || !strcmp(nm, "..") ||
		    (!*rel && !strcmp(nm, ".tensorfs")))
			continue;
		free(sub);
		free(srel);
		srel = NULL;
		if (asprintf(&sub, "%s/%s", path, nm) < 0) {
			sub = NULL;
			ret = -ENOMEM;
			continue;
		}
		if (asprintf(&srel, "%s%s%s", rel, *rel ? "/" : "", nm) < 0) {
			srel = NULL;
			ret = -ENOMEM;
			continue;
		}
		if (lstat(sub, &st)) {
			ret = refuse(p, srel, "%s", strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			ret = walk(p, sub, srel);
		} else if (S_ISREG(st.st_mode)) {
			ret = take_file(p, sub, srel, (uint64_t)st.st_size);
		}
		/* symlinks and the rest: not tensors */
	}
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	free(sub);
	free(srel);
	return ret;
}

static int cmp_pfile(const void *pa, const void *pb)
{
	const struct pfile *a = pa, *b = pb;

	return tfs_name_cmp(a->name, a->name_len, b->name, b->name_len);
}

/* the files of p->v (sorted) whose names collide: named by their path */
static int rename_dups(struct pack *p)
{
	bool *dup = calloc(p->n ? p->n : 1, sizeof(*dup));
	size_t k;

	if (!dup)
		return -ENOMEM;
	for (k = 1; k < p->n; k++)
		if (!cmp_pfile(&p->v[k - 1], &p->v[k]))
			dup[k - 1] = dup[k] = true;
	for (k = 0; k < p->n; k++) {
		if (!dup[k])
			continue;
		free(p->v[k].name);
		p->v[k].name = NULL;
		if (path_name(&p->v[k], p->v[k].rel, false)) {
			free(dup);
			return -ENOMEM;
		}
	}
	free(dup);
	return 0;
}

/* the __metadata__ of DIR/.tensorfs/export/'s first file, or a new one */
static json_t *pack_metadata(const char *dir)
{
	static const char *const names[] = {"model.safetensors",
					    "model-00001-of-"};
	char *path = NULL;
	uint8_t len8[8];
	uint64_t len = 0;
	json_t *m = NULL, *h;
	struct dirent **list = NULL;
	int i, n, k, fd;

	if (asprintf(&path, "%s/.tensorfs/export", dir) < 0)
		return NULL;
	n = scandir(path, &list, NULL, alphasort);
	for (i = 0; !m && i < n; i++) {
		for (k = 0; k < 2; k++)
			if (!strncmp(list[i]->d_name, names[k],
				     strlen(names[k])) &&
			    strstr(list[i]->d_name, ".safetensors") &&
			    !strstr(list[i]->d_name, ".json"))
				break;
		if (k == 2)
			continue;
		{
			char *f = NULL, *text;

			if (asprintf(&f, "%s/%s", path, list[i]->d_name) < 0)
				break;
			fd = open(f, O_RDONLY | O_CLOEXEC);
			free(f);
			if (fd < 0)
				continue;
			if (read(fd, len8, 8) == 8) {
				for (k = 0; k < 8; k++)
					len |= (uint64_t)len8[k] << (8 * k);
				text = len < (100u << 20) ? malloc(len) : NULL;
				if (text &&
				    read(fd, text, len) == (ssize_t)len) {
					h = json_loadb(text, len, 0, NULL);
					if (json_is_object(json_object_get(
						    h, "__metadata__")))
						m = json_incref(json_object_get(
							h, "__metadata__"));
					json_decref(h);
				}
				free(text);
			}
			close(fd);
		}
	}
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	free(path);
	if (!m) {
		m = json_object();
		if (m && (json_object_set_new(m, "format", json_string("pt")) ||
			  json_object_set_new(m, "tensorfs.format",
					      json_string("pack")))) {
			json_decref(m);
			m = NULL;
		}
	}
	return m;
}

static int copy_data(int out, const struct pfile *f)
{
	int in = open(f->path, O_RDONLY | O_CLOEXEC);
	loff_t ioff = (loff_t)f->data_off;
	uint64_t done = 0;
	char buf[1 << 16];
	bool can = true;
	ssize_t n;
	int ret = 0;

	if (in < 0)
		return -errno;
	while (!ret && done < f->size) {
		size_t want = f->size - done < (1u << 30)
				      ? (size_t)(f->size - done)
				      : (1u << 30);

		if (can) {
			n = copy_file_range(in, &ioff, out, NULL, want, 0);
			if (n < 0 && done == 0 &&
			    (errno == EXDEV || errno == EINVAL ||
			     errno == ENOSYS || errno == EOPNOTSUPP)) {
				can = false;
				continue;
			}
		} else {
			n = pread(in, buf,
				  want < sizeof(buf) ? want : sizeof(buf),
				  ioff);
			if (n > 0 && write(out, buf, (size_t)n) != n)
				n = -1;
			if (n > 0)
				ioff += n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ret = n < 0 ? -errno : -EIO; /* shrank under us */
		else
			done += (uint64_t)n;
	}
	close(in);
	return ret;
}

/*
 * A swapped and/or transposed file's bytes (f->how), element by element in
 * row-major order, as the export view makes them (src/views/export.c)
 */
static int convert_data(int out, const struct pfile *f)
{
	uint32_t es = f->how & TFS_EXPORT_TRANSPOSE ? f->elem : f->unit;
	uint32_t nd = f->how & TFS_EXPORT_TRANSPOSE ? f->ndim : 0, k, b;
	uint64_t idx[MAX_NDIM] = {0}, stride[MAX_NDIM], src = 0, e, n;
	uint8_t buf[1 << 16], *d, t;
	const uint8_t *map;
	struct stat st;
	size_t used = 0;
	int in, ret = 0;

	if (!f->size)
		return 0;
	if (!es || es > 64 || f->size % es)
		return -EINVAL;
	in = open(f->path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	/* shrunk since the walk: an error, not a SIGBUS */
	if (fstat(in, &st) || (uint64_t)st.st_size < f->data_off + f->size) {
		close(in);
		return -EIO;
	}
	map = mmap(NULL, f->data_off + f->size, PROT_READ, MAP_PRIVATE, in, 0);
	close(in);
	if (map == MAP_FAILED)
		return -errno;
	/* column-major strides, in elements */
	for (k = 0; k < nd; k++)
		stride[k] = k ? stride[k - 1] * f->shape[k - 1] : 1;
	n = f->size / es;
	for (e = 0; !ret && e < n; e++) {
		d = buf + used;
		memcpy(d, map + f->data_off + (nd ? src : e) * es, es);
		if (f->how & TFS_EXPORT_SWAP)
			for (b = 0; b < es; b += f->unit)
				for (k = 0; k < f->unit / 2; k++) {
					t = d[b + k];
					d[b + k] = d[b + f->unit - 1 - k];
					d[b + f->unit - 1 - k] = t;
				}
		used += es;
		if (used + es > sizeof(buf) || e + 1 == n) {
			if (write(out, buf, used) != (ssize_t)used)
				ret = -EIO;
			used = 0;
		}
		/* the next element in row-major order */
		for (k = nd; k-- > 0;) {
			idx[k]++;
			src += stride[k];
			if (idx[k] < f->shape[k])
				break;
			src -= idx[k] * stride[k];
			idx[k] = 0;
		}
	}
	munmap((void *)map, f->data_off + f->size);
	return ret;
}

int tfs_cmd_pack(int argc, char **argv)
{
	struct pack p = {0};
	struct tfs_export_entry *v = NULL;
	const char *dir, *dest;
	char *head = NULL, *tmp = NULL;
	uint64_t head_len, data_len;
	json_t *meta = NULL;
	bool force = false;
	struct stat st;
	int i, npos = 0, fd = -1, ret = 0, status = TFS_EXIT_USAGE;
	const char *pos[2];
	size_t k;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force")) {
			force = true;
		} else if (!strcmp(argv[i], "--help") ||
			   !strcmp(argv[i], "-h")) {
			printf("usage: %s pack [--force] DIR DEST.safetensors\n"
			       "Pack a tree of tensor files (a mount copied with "
			       "cp -a or rsync -aX, edited;\n"
			       ".npy files too) into one safetensors file. "
			       "Names from user.tensorfs.name,\n"
			       "else the path joined with '.'; dtype and shape "
			       "from user.tensorfs.dtype\n"
			       "and user.tensorfs.shape.  DIR/.tensorfs is "
			       "skipped; its export's\n"
			       "__metadata__ is kept.\n"
			       "  --force  replace DEST if it exists\n",
			       tfs_progname);
			return TFS_EXIT_OK;
		} else if (npos < 2 && (argv[i][0] != '-' || !argv[i][1])) {
			pos[npos++] = argv[i];
		} else {
			npos = 3;
			break;
		}
	}
	if (npos != 2) {
		fprintf(stderr,
			"usage: %s pack [--force] DIR DEST.safetensors\n",
			tfs_progname);
		return TFS_EXIT_USAGE;
	}
	dir = pos[0];
	dest = pos[1];
	if (!force && lstat(dest, &st) == 0) {
		tfs_cli_say(stderr,
			    "%s pack: %s: exists (--force replaces it)\n",
			    tfs_progname, dest);
		return TFS_EXIT_USAGE;
	}
	ret = walk(&p, dir, "");
	if (ret) {
		tfs_cli_say(stderr, "%s pack: %s\n", tfs_progname,
			    p.why[0] ? p.why : strerror(-ret));
		goto out;
	}
	qsort(p.v, p.n, sizeof(*p.v), cmp_pfile);
	/* a name several files give: named by their paths, as exported */
	ret = rename_dups(&p);
	if (ret)
		goto fail;
	qsort(p.v, p.n, sizeof(*p.v), cmp_pfile);
	for (k = 1; k < p.n; k++)
		if (!cmp_pfile(&p.v[k - 1], &p.v[k])) {
			tfs_cli_say(stderr,
				    "%s pack: %s and %s: the same name %.*s\n",
				    tfs_progname, p.v[k - 1].path, p.v[k].path,
				    (int)(p.v[k].name_len > 200
						  ? 200
						  : p.v[k].name_len),
				    p.v[k].name);
			goto out;
		}
	v = calloc(p.n ? p.n : 1, sizeof(*v));
	meta = pack_metadata(dir);
	if (!v || !meta) {
		ret = -ENOMEM;
		goto fail;
	}
	for (k = 0; k < p.n; k++)
		v[k] = (struct tfs_export_entry){
			.name = p.v[k].name,
			.name_len = p.v[k].name_len,
			.dtype = p.v[k].dtype,
			.shape = p.v[k].shape,
			.ndim = p.v[k].ndim,
			.size = p.v[k].size,
		};
	ret = tfs_export_header(v, (uint32_t)p.n, meta, &head, &head_len,
				&data_len);
	if (ret == -EINVAL) {
		tfs_cli_say(stderr, "%s pack: a name is not UTF-8\n",
			    tfs_progname);
		goto out;
	}
	if (ret)
		goto fail;
	fd = tfs_cli_tmpfile(dest, &tmp);
	if (fd < 0) {
		ret = fd;
		goto fail;
	}
	if (!ret && write(fd, head, head_len) != (ssize_t)head_len)
		ret = -EIO;
	for (k = 0; !ret && k < p.n; k++)
		ret = p.v[k].how ? convert_data(fd, &p.v[k])
				 : copy_data(fd, &p.v[k]);
	if (close(fd) && !ret)
		ret = -errno;
	fd = -1;
	if (!ret && rename(tmp, dest))
		ret = -errno;
	if (ret)
		goto fail;
	tfs_cli_say(stderr, "%s pack: %s: %zu %s, %llu bytes\n", tfs_progname,
		    dest, p.n, p.n == 1 ? "tensor" : "tensors",
		    (unsigned long long)(head_len + data_len));
	status = TFS_EXIT_OK;
	goto out;
fail:
	tfs_cli_say(stderr, "%s pack: %s: %s\n", tfs_progname, dest,
		    strerror(-ret));
	status = TFS_EXIT_IO;
out:
	if (tmp && status != TFS_EXIT_OK)
		unlink(tmp);
	free(tmp);
	free(head);
	free(v);
	json_decref(meta);
	for (k = 0; k < p.n; k++) {
		free(p.v[k].name);
		free(p.v[k].path);
		free(p.v[k].rel);
	}
	free(p.v);
	return status;
}
