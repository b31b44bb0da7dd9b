// SPDX-License-Identifier: MIT
/* URL schemes of remote sources: see resolve.h and docs/remote.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "remote/resolve.h"
#include "core/diag.h"
#include "core/format.h"

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

char *tfs_remote_escape_path(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path), i, o = 0;
	char *out = malloc(3 * n + 1);

	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~' || c == '/') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

/* a query value: as a path, and '/' too (SigV4's canonical form) */
static char *escape_query(const char *v)
{
	char *p = tfs_remote_escape_path(v), *out, *o;
	size_t n = 0, i;

	if (!p)
		return NULL;
	for (i = 0; p[i]; i++)
		n += p[i] == '/' ? 3 : 1;
	out = malloc(n + 1);
	for (i = 0, o = out; out && p[i]; i++) {
		if (p[i] == '/') {
			memcpy(o, "%2F", 3);
			o += 3;
		} else {
			*o++ = p[i];
		}
	}
	if (out)
		*o = '\0';
	free(p);
	return out;
}

static int add_header(struct tfs_remote_target *t, const char *fmt,
		      const char *v)
{
	struct curl_slist *n;
	char *h;

	if (asprintf(&h, fmt, v) < 0)
		return -ENOMEM;
	n = curl_slist_append(t->headers, h);
	free(h);
	if (!n)
		return -ENOMEM;
	t->headers = n;
	return 0;
}

/* s3://bucket/key: path style on $AWS_ENDPOINT_URL, else AWS itself */
static int resolve_s3(const char *rest, bool listing,
		      struct tfs_remote_target *t, struct tfs_diag *d)
{
	const char *slash = strchr(rest, '/'), *ep, *region, *id, *secret,
		   *token;
	char *key = NULL;
	int ret = 0;

	if (!slash)
		slash = rest + strlen(rest);
	if (slash == rest || (!listing && (!slash[0] || !slash[1])))
		return tfs_diag_set(d, -EINVAL, "expected s3://BUCKET/KEY");
	region = env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region)
		region = "us-east-1";
	/* listing: the bucket's URL, the prefix goes in the query */
	key = tfs_remote_escape_path(listing || !*slash ? "" : slash + 1);
	if (!key)
		return -ENOMEM;
	ep = env("AWS_ENDPOINT_URL_S3");
	if (!ep)
		ep = env("AWS_ENDPOINT_URL");
	if (ep) {
		size_t el = strlen(ep);

		while (el && ep[el - 1] == '/')
			el--;
		if (asprintf(&t->url, "%.*s/%.*s%s%s", (int)el, ep,
			     (int)(slash - rest), rest, *key ? "/" : "",
			     key) < 0)
			t->url = NULL;
	} else if (asprintf(&t->url, "https://%.*s.s3.%s.amazonaws.com/%s",
			    (int)(slash - rest), rest, region, key) < 0) {
		t->url = NULL;
	}
	free(key);
	if (!t->url)
		return -ENOMEM;
	id = env("AWS_ACCESS_KEY_ID");
	secret = env("AWS_SECRET_ACCESS_KEY");
	token = env("AWS_SESSION_TOKEN");
	if (!id || !secret)
		return 0; /* a public bucket: unsigned */
	if (asprintf(&t->userpwd, "%s:%s", id, secret) < 0 ||
	    asprintf(&t->sigv4, "aws:amz:%s:s3", region) < 0)
		return -ENOMEM;
	/* curl signs this header's value: S3 must not hash a body */
	ret = add_header(t, "%s", "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (!ret && token)
		ret = add_header(t, "x-amz-security-token: %s", token);
	return ret;
}

struct sink {
	char *p;
	size_t n;
	bool want_next;
	char *next; /* a Link header's rel="next" URL (the Hub's pages) */
};

/* Link: <URL>; rel="next" */
static size_t on_link(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	const char *lt, *gt;
	char line[4096];

	if (!s->want_next || len >= sizeof(line) || len < 5 ||
	    strncasecmp(p, "link:", 5))
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	lt = strchr(line, '<');
	gt = lt ? strchr(lt, '>') : NULL;
	if (gt && strstr(gt, "rel=\"next\"") && !s->next)
		s->next = strndup(lt + 1, (size_t)(gt - lt - 1));
	return len;
}

static size_t on_json(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	char *q;

	if (s->n + len > (1u << 20))
		return 0;
	q = realloc(s->p, s->n + len + 1);
	if (!q)
		return 0;
	memcpy(q + s->n, p, len);
	s->n += len;
	q[s->n] = '\0';
	s->p = q;
	return len;
}

/* GET @url (at most 1 MiB) into @s; 0 or -errno with @d filled */
static int get_small(const char *url, const struct tfs_remote_target *t,
		     bool insecure, long timeout_ms, struct sink *s,
		     const char *what, struct tfs_diag *d)
{
	CURL *h = curl_easy_init();
	char errbuf[CURL_ERROR_SIZE] = "";
	long status = 0;
	CURLcode cc;
	int ret = 0;

	if (!h)
		return -ENOMEM;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_json);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_link);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	if (t->userpwd) {
		curl_easy_setopt(h, CURLOPT_USERPWD, t->userpwd);
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, t->sigv4);
	}
	if (insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK)
		ret = tfs_diag_set(
			d, cc == CURLE_COULDNT_CONNECT ? -EHOSTUNREACH : -EIO,
			"%s: %s", what,
			*errbuf ? errbuf : curl_easy_strerror(cc));
	else if (status == 401 || status == 403)
		ret = tfs_diag_set(d, -EACCES, "%s: HTTP %ld: access denied",
				   what, status);
	else if (status != 200)
		ret = tfs_diag_set(d, status == 404 ? -ENOENT : -EIO,
				   "%s: HTTP %ld", what, status);
	else if (!s->p)
		ret = tfs_diag_set(d, -EIO, "%s: empty answer", what);
	curl_easy_cleanup(h);
	return ret;
}

static bool is_commit(const char *s)
{
	return strspn(s, "0123456789abcdef") == 40 && !s[40];
}

/* the commit a revision of a Hub repository is now */
static int hub_commit(const char *ep, const char *repo, const char *rev,
		      struct tfs_remote_target *t, bool insecure,
		      long timeout_ms, char **sha, struct tfs_diag *d)
{
	struct sink s = {0};
	char *url = NULL, *erev;
	json_t *root = NULL, *v;
	int ret;

	if (is_commit(rev)) /* pinned already: no question to ask */
		return (*sha = strdup(rev)) ? 0 : -ENOMEM;
	erev = tfs_remote_escape_path(rev);
	if (!erev || asprintf(&url, "%s/api/models/%s/revision/%s", ep, repo,
			      erev) < 0) {
		free(erev);
		return -ENOMEM;
	}
	free(erev);
	ret = get_small(url, t, insecure, timeout_ms, &s,
			"the Hub (revision; HF_TOKEN?)", d);
	free(url);
	if (ret)
		goto out;
	root = json_loads(s.p, 0, NULL);
	v = root ? json_object_get(root, "sha") : NULL;
	if (!json_is_string(v) || !is_commit(json_string_value(v))) {
		ret = tfs_diag_set(d, -EIO,
				   "the Hub: no commit for revision "
				   "%s",
				   rev);
		goto out;
	}
	*sha = strdup(json_string_value(v));
	ret = *sha ? 0 : -ENOMEM;
out:
	json_decref(root);
	free(s.p);
	return ret;
}

/* hf://org/repo[@revision]/path: the file at the revision's commit now */
static int resolve_hf(const char *rest, struct tfs_remote_target *t,
		      bool insecure, long timeout_ms, struct tfs_diag *d)
{
	const char *ep = env("HF_ENDPOINT"), *token = env("HF_TOKEN");
	const char *s1 = strchr(rest, '/'), *s2, *at, *path;
	char *repo = NULL, *rev = NULL, *sha = NULL, *epath = NULL;
	size_t el;
	int ret;

	if (!ep)
		ep = "https://huggingface.co";
	el = strlen(ep);
	while (el && ep[el - 1] == '/')
		el--;
	s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	if (!s1 || s1 == rest || !s2 || !s2[1])
		return tfs_diag_set(d, -ENOTSUP,
				    "expected hf://ORG/REPO[@REVISION]/FILE "
				    "(a whole repository is not supported "
				    "yet)");
	at = memchr(s1, '@', (size_t)(s2 - s1));
	path = s2 + 1;
	repo = strndup(rest, (size_t)((at ? at : s2) - rest));
	rev = at ? strndup(at + 1, (size_t)(s2 - at - 1)) : strdup("main");
	if (!repo || !rev) {
		ret = -ENOMEM;
		goto out;
	}
	if (token) {
		ret = add_header(t, "Authorization: Bearer %s", token);
		if (ret)
			goto out;
	}
	{
		char *e = strndup(ep, el);

		if (!e) {
			ret = -ENOMEM;
			goto out;
		}
		ret = hub_commit(e, repo, rev, t, insecure, timeout_ms, &sha,
				 d);
		if (!ret) {
			epath = tfs_remote_escape_path(path);
			if (!epath || asprintf(&t->url, "%s/%s/resolve/%s/%s",
					       e, repo, sha, epath) < 0) {
				t->url = NULL;
				ret = -ENOMEM;
			}
		}
		free(e);
	}
out:
	free(repo);
	free(rev);
	free(sha);
	free(epath);
	return ret;
}

int tfs_remote_resolve(const char *url, struct tfs_remote_target *t,
		       bool insecure, long timeout_ms, struct tfs_diag *d)
{
	int ret;

	memset(t, 0, sizeof(*t));
	if (strncmp(url, "s3://", 5) == 0)
		ret = resolve_s3(url + 5, false, t, d);
	else if (strncmp(url, "hf://", 5) == 0)
		ret = resolve_hf(url + 5, t, insecure, timeout_ms, d);
	else
		ret = (t->url = strdup(url)) ? 0 : -ENOMEM;
	if (ret)
		tfs_remote_target_free(t);
	return ret;
}

void tfs_remote_target_free(struct tfs_remote_target *t)
{
	free(t->url);
	curl_slist_free_all(t->headers);
	free(t->userpwd);
	free(t->sigv4);
	memset(t, 0, sizeof(*t));
}

/* the index among @names (sorted), as the readers rank them */
static const char *pick_index(char *const *names, size_t n)
{
	return tfs_format_pick_index((const char *const *)names, n);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct names {
	char **v;
	size_t n;
};

static int names_add(struct names *ns, const char *p, size_t len)
{
	char **v = realloc(ns->v, (ns->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	ns->v = v;
	ns->v[ns->n] = strndup(p, len);
	if (!ns->v[ns->n])
		return -ENOMEM;
	ns->n++;
	return 0;
}

/*
 * S3 ListObjectsV2 under @prefix: the names below it, one level, or
 * (@deep) all of them, as paths relative to it (at most one answer: 1,000
 * keys).
 */
static int list_s3(const char *rest, bool deep, struct names *ns, bool insecure,
		   long timeout_ms, char **dir, struct tfs_diag *d)
{
	struct tfs_remote_target t;
	const char *slash = strchr(rest, '/'), *prefix = slash ? slash + 1 : "";
	struct sink s = {0};
	char *url = NULL, *ep = NULL, *token = NULL, *et = NULL;
	const char *p, *q;
	size_t pl = strlen(prefix);
	unsigned pages = 0;
	int ret;

	memset(&t, 0, sizeof(t));
	ret = resolve_s3(rest, true, &t, d);
	if (ret) {
		tfs_remote_target_free(&t);
		return ret;
	}
	ep = escape_query(prefix);
	if (!ep) {
		ret = -ENOMEM;
		goto out;
	}
next_page:
	/* the query's parameters sorted, as SigV4 wants them */
	if (asprintf(&url, "%s?%s%s%s%slist-type=2&prefix=%s", t.url,
		     et ? "continuation-token=" : "", et ? et : "",
		     et ? "&" : "", deep ? "" : "delimiter=%2F&", ep) < 0) {
		url = NULL;
		ret = -ENOMEM;
		goto out;
	}
	ret = get_small(url, &t, insecure, timeout_ms, &s, "S3 listing", d);
	for (p = s.p; !ret && p && (p = strstr(p, "<Key>")); p = q) {
		p += 5;
		q = strstr(p, "</Key>");
		if (!q)
			break;
		/*
		 * A name under the prefix (right under it unless @deep), not
		 * a "directory" marker, without XML entities (&, <, >: such
		 * keys are left out rather than decoded).
		 */
		if ((size_t)(q - p) > pl && strncmp(p, prefix, pl) == 0 &&
		    q[-1] != '/' && !memchr(p, '&', (size_t)(q - p)) &&
		    (deep || !memchr(p + pl, '/', (size_t)(q - p) - pl)))
			ret = names_add(ns, p + pl, (size_t)(q - p) - pl);
	}
	/* a page of 1,000 keys: the next one from its token */
	p = s.p && strstr(s.p, "<IsTruncated>true</IsTruncated>")
		    ? strstr(s.p, "<NextContinuationToken>")
		    : NULL;
	q = p ? strstr(p, "</NextContinuationToken>") : NULL;
	if (!ret && q) {
		p += strlen("<NextContinuationToken>");
		free(token);
		free(et);
		free(url);
		url = et = NULL;
		token = strndup(p, (size_t)(q - p));
		et = token ? escape_query(token) : NULL;
		free(s.p);
		s.p = NULL;
		s.n = 0;
		if (!et)
			ret = -ENOMEM;
		else if (++pages == 1000)
			ret = tfs_diag_set(d, -E2BIG,
					   "S3 listing: more than "
					   "1,000 pages");
		else
			goto next_page;
	}
	if (!ret &&
	    asprintf(dir, "s3://%.*s",
		     (int)(strlen(rest) - (rest[strlen(rest) - 1] == '/')),
		     rest) < 0) {
		*dir = NULL;
		ret = -ENOMEM;
	}
out:
	free(ep);
	free(et);
	free(token);
	free(url);
	free(s.p);
	free(s.next);
	tfs_remote_target_free(&t);
	return ret;
}

/* the Hub's tree API at the revision's commit: the top-level files, or
 * (@deep) all of them */
static int list_hf(const char *rest, bool deep, struct names *ns, bool insecure,
		   long timeout_ms, char **dir, struct tfs_diag *d)
{
	const char *ep = env("HF_ENDPOINT"), *token = env("HF_TOKEN");
	const char *at = strchr(rest, '@');
	struct tfs_remote_target t = {0};
	char *repo = NULL, *rev = NULL, *sha = NULL, *url = NULL, *e = NULL;
	struct sink s = {.want_next = true};
	json_t *root = NULL, *it;
	size_t i, rl = strcspn(rest, "@/");
	unsigned pages = 0;
	int ret = 0;

	if (!ep)
		ep = "https://huggingface.co";
	e = strndup(ep, strlen(ep) - (ep[strlen(ep) - 1] == '/'));
	repo = strndup(rest, at ? (size_t)(at - rest) : strcspn(rest, "@"));
	rev = at ? strndup(at + 1, strcspn(at + 1, "/")) : strdup("main");
	if (!e || !repo || !rev ||
	    (repo[0] && repo[strlen(repo) - 1] == '/' &&
	     (repo[strlen(repo) - 1] = '\0', 0)))
		ret = -ENOMEM;
	(void)rl;
	if (!ret && token)
		ret = add_header(&t, "Authorization: Bearer %s", token);
	if (!ret)
		ret = hub_commit(e, repo, rev, &t, insecure, timeout_ms, &sha,
				 d);
	if (!ret && asprintf(&url, "%s/api/models/%s/tree/%s%s", e, repo, sha,
			     deep ? "?recursive=True" : "") < 0) {
		url = NULL;
		ret = -ENOMEM;
	}
next_page:
	if (!ret)
		ret = get_small(url, &t, insecure, timeout_ms, &s,
				"the Hub (tree)", d);
	root = ret ? NULL : json_loads(s.p, 0, NULL);
	if (!ret && !json_is_array(root))
		ret = tfs_diag_set(d, -EIO, "the Hub: the tree is not a list");
	json_array_foreach(root, i, it)
	{
		json_t *path = json_object_get(it, "path");
		json_t *type = json_object_get(it, "type");

		if (ret)
			break;
		if (json_is_string(path) && json_is_string(type) &&
		    strcmp(json_string_value(type), "file") == 0 &&
		    (deep || !strchr(json_string_value(path), '/')))
			ret = names_add(ns, json_string_value(path),
					strlen(json_string_value(path)));
	}
	json_decref(root);
	root = NULL;
	/*
	 * The next page (a Link header): only from the same endpoint's API,
	 * the token goes with it.
	 */
	if (!ret && s.next) {
		size_t el = strlen(e);

		if (strncmp(s.next, e, el) || strncmp(s.next + el, "/api/", 5))
			ret = tfs_diag_set(d, -EIO,
					   "the Hub: a next page elsewhere");
		else if (++pages == 1000)
			ret = tfs_diag_set(d, -E2BIG,
					   "the Hub: more than 1,000 pages");
		free(url);
		url = s.next;
		s.next = NULL;
		free(s.p);
		s.p = NULL;
		s.n = 0;
		if (!ret)
			goto next_page;
	}
	if (!ret && asprintf(dir, "hf://%s@%s", repo, sha) < 0) {
		*dir = NULL;
		ret = -ENOMEM;
	}
	tfs_remote_target_free(&t);
	free(s.p);
	free(s.next);
	free(url);
	free(e);
	free(repo);
	free(rev);
	free(sha);
	return ret;
}

/*
 * A URL that names a shard index itself (its last component ends in a
 * reader's tfs_format.index_suffix, as the registry says): its shards are
 * named in it, beside it, so no listing is needed.  1 with *dir (the URL
 * up to its last '/') and *index (the rest), 0 when it is no index,
 * -ENOMEM.  A URL with a query (a signed URL) is not split: its siblings
 * would need their own signatures.
 */
static int index_url(const char *url, char **dir, char **index)
{
	const char *slash = strrchr(url, '/'), *scheme = strstr(url, "://");

	if (!slash || !scheme || slash < scheme + 3 || strchr(url, '?') ||
	    strchr(url, '#') || tfs_format_index_rank(slash + 1) < 0)
		return 0;
	*dir = strndup(url, (size_t)(slash - url));
	*index = strdup(slash + 1);
	if (!*dir || !*index) {
		free(*dir);
		free(*index);
		*dir = *index = NULL;
		return -ENOMEM;
	}
	return 1;
}

int tfs_remote_find_index_with(const char *url, bool insecure, long timeout_ms,
			       char **dir, char **index, struct tfs_diag *d)
{
	struct names ns = {0};
	const char *found;
	size_t i, slashes = 0;
	int ret;

	*dir = *index = NULL;
	ret = index_url(url, dir, index);
	if (ret)
		return ret;
	if (strncmp(url, "s3://", 5) == 0) {
		const char *rest = url + 5;

		/* s3://BUCKET, s3://BUCKET/ or s3://BUCKET/PREFIX/ */
		if (strchr(rest, '/') && rest[strlen(rest) - 1] != '/')
			return 0;
		ret = list_s3(rest, false, &ns, insecure, timeout_ms, dir, d);
	} else if (strncmp(url, "hf://", 5) == 0) {
		const char *p;

		for (p = url + 5; *p; p++)
			slashes += *p == '/' && p[1];
		if (slashes != 1)
			return 0; /* ORG/REPO[@REV]/FILE: one object */
		ret = list_hf(url + 5, false, &ns, insecure, timeout_ms, dir,
			      d);
	} else {
		return 0;
	}
	if (!ret) {
		qsort(ns.v, ns.n, sizeof(*ns.v), cmp_str);
		found = pick_index(ns.v, ns.n);
		/* no index: a directory (tfs_remote_list walks it) */
		if (found && !(*index = strdup(found)))
			ret = -ENOMEM;
	}
	for (i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
	if (ret) {
		free(*dir);
		free(*index);
		*dir = *index = NULL;
		return ret;
	}
	return 1;
}

int tfs_remote_list_with(const char *dir, bool insecure, long timeout_ms,
			 char ***names, size_t *n, struct tfs_diag *d)
{
	struct names ns = {0};
	char *rest = NULL, *shown = NULL;
	size_t i;
	int ret;

	*names = NULL;
	*n = 0;
	if (strncmp(dir, "s3://", 5) == 0) {
		/* s3://BUCKET or s3://BUCKET/PREFIX: the prefix ends in / */
		const char *bucket = dir + 5;
		size_t bl = strlen(bucket);
		bool slash = bl && strcspn(bucket, "/") < bl;

		if (asprintf(&rest, "%s%s", bucket,
			     slash && bucket[bl - 1] != '/' ? "/" : "") < 0)
			return -ENOMEM;
		ret = list_s3(rest, true, &ns, insecure, timeout_ms, &shown, d);
	} else if (strncmp(dir, "hf://", 5) == 0) {
		ret = list_hf(dir + 5, true, &ns, insecure, timeout_ms, &shown,
			      d);
	} else {
		ret = tfs_diag_set(d, -EINVAL, "not a remote directory");
	}
	free(rest);
	free(shown);
	if (!ret) {
		qsort(ns.v, ns.n, sizeof(*ns.v), cmp_str);
		*names = ns.v;
		*n = ns.n;
		return 0;
	}
	for (i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
	return ret;
}
