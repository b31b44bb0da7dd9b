// SPDX-License-Identifier: MIT
/* URL schemes of remote sources: see resolve.h and docs/remote.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "remote/resolve.h"
#include "tensorfs/diag.h"

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
static int resolve_s3(const char *rest, struct tfs_remote_target *t,
		      struct tfs_diag *d)
{
	const char *slash = strchr(rest, '/'), *ep, *region, *id, *secret,
		   *token;
	char *key = NULL;
	int ret = 0;

	if (!slash || slash == rest || !slash[1])
		return tfs_diag_set(d, -EINVAL,
				    "expected s3://BUCKET/KEY (a prefix "
				    "ending in / is not supported yet)");
	if (slash[strlen(slash) - 1] == '/')
		return tfs_diag_set(d, -ENOTSUP,
				    "s3:// prefixes (directories) are not "
				    "supported yet");
	region = env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region)
		region = "us-east-1";
	key = tfs_remote_escape_path(slash + 1);
	if (!key)
		return -ENOMEM;
	ep = env("AWS_ENDPOINT_URL_S3");
	if (!ep)
		ep = env("AWS_ENDPOINT_URL");
	if (ep) {
		size_t el = strlen(ep);

		while (el && ep[el - 1] == '/')
			el--;
		if (asprintf(&t->url, "%.*s/%.*s/%s", (int)el, ep,
			     (int)(slash - rest), rest, key) < 0)
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
};

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

/* the commit a revision of a Hub repository is now */
static int hub_commit(const char *ep, const char *repo, const char *rev,
		      struct tfs_remote_target *t, bool insecure,
		      long timeout_ms, char **sha, struct tfs_diag *d)
{
	struct sink s = {0};
	CURL *h = curl_easy_init();
	char *url = NULL, *erev = tfs_remote_escape_path(rev);
	char errbuf[CURL_ERROR_SIZE] = "";
	json_t *root = NULL, *v;
	long status = 0;
	CURLcode cc;
	int ret;

	if (!h || !erev ||
	    asprintf(&url, "%s/api/models/%s/revision/%s", ep, repo, erev) <
		    0) {
		url = NULL;
		ret = -ENOMEM;
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_json);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	if (insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK) {
		ret = tfs_diag_set(
			d, cc == CURLE_COULDNT_CONNECT ? -EHOSTUNREACH : -EIO,
			"the Hub: %s",
			*errbuf ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	if (status == 401 || status == 403) {
		ret = tfs_diag_set(d, -EACCES,
				   "the Hub: HTTP %ld: access "
				   "denied (HF_TOKEN?)",
				   status);
		goto out;
	}
	if (status != 200) {
		ret = tfs_diag_set(d, status == 404 ? -ENOENT : -EIO,
				   "the Hub: HTTP %ld for revision %s", status,
				   rev);
		goto out;
	}
	root = s.p ? json_loads(s.p, 0, NULL) : NULL;
	v = root ? json_object_get(root, "sha") : NULL;
	if (!json_is_string(v) ||
	    strspn(json_string_value(v), "0123456789abcdef") != 40 ||
	    json_string_value(v)[40]) {
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
	if (h)
		curl_easy_cleanup(h);
	free(url);
	free(erev);
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
		ret = resolve_s3(url + 5, t, d);
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
