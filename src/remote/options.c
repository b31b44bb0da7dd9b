// SPDX-License-Identifier: MIT
/*
 * Remote options (remote_mem=, cache_dir=, insecure, ...), the URL schemes
 * we open, and what of a URL may be shown: see remote.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/remote.h"
#include "remote/remote_i.h"
#include "core/image.h"

void tfs_remote_config_default(struct tfs_remote_config *c)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	memset(c, 0, sizeof(*c));
	c->mem = 64u << 20;
	c->timeout_ms = 30000;
	c->conns = 8;
	c->prefetch = 128u << 20;
	c->cache_max = 16ull << 30;
	if (xdg && *xdg) {
		if (asprintf(&c->cache_dir, "%s/tensorfs", xdg) < 0)
			c->cache_dir = NULL;
	} else if (home && *home) {
		if (asprintf(&c->cache_dir, "%s/.cache/tensorfs", home) < 0)
			c->cache_dir = NULL;
	}
}

void tfs_remote_config_free(struct tfs_remote_config *c)
{
	free(c->cache_dir);
	c->cache_dir = NULL;
}

static bool opt_is(const char *opt, size_t len, const char *name,
		   const char **val)
{
	size_t n = strlen(name);

	if (name[n - 1] == '=') {
		if (len < n || strncmp(opt, name, n))
			return false;
		*val = opt + n;
		return true;
	}
	return len == n && strncmp(opt, name, n) == 0;
}

int tfs_remote_option(struct tfs_remote_config *c, const char *opt, size_t len)
{
	const char *v = NULL;
	char buf[256];
	uint64_t n;

	if (opt_is(opt, len, "insecure", &v)) {
		c->insecure = true;
		return 1;
	}
	if (opt_is(opt, len, "no_cache", &v)) {
		free(c->cache_dir);
		c->cache_dir = NULL;
		return 1;
	}
	if (!opt_is(opt, len, "remote_mem=", &v) &&
	    !opt_is(opt, len, "remote_timeout=", &v) &&
	    !opt_is(opt, len, "remote_conns=", &v) &&
	    !opt_is(opt, len, "remote_prefetch=", &v) &&
	    !opt_is(opt, len, "cache_dir=", &v) &&
	    !opt_is(opt, len, "cache_max=", &v))
		return 0;
	if ((size_t)(opt + len - v) >= sizeof(buf) || opt + len == v)
		return -EINVAL;
	memcpy(buf, v, (size_t)(opt + len - v));
	buf[opt + len - v] = '\0';
	if (opt[0] == 'c' && opt[6] == 'd') {
		free(c->cache_dir);
		c->cache_dir = strdup(buf);
		return c->cache_dir ? 1 : -ENOMEM;
	}
	if (opt_is(opt, len, "remote_timeout=", &v) ||
	    opt_is(opt, len, "remote_conns=", &v)) {
		char *end;

		errno = 0;
		n = strtoull(buf, &end, 10);
		if (errno || *end || n == 0 || n > 3600)
			return -EINVAL;
		if (opt[7] == 't')
			c->timeout_ms = (unsigned)n * 1000;
		else if (n <= 64)
			c->conns = (unsigned)n;
		else
			return -EINVAL;
		return 1;
	}
	if (tfs_parse_size(buf, &n))
		return -EINVAL;
	if (opt_is(opt, len, "remote_mem=", &v)) {
		if (n < CHUNK)
			return -EINVAL;
		c->mem = n;
	} else if (opt_is(opt, len, "remote_prefetch=", &v)) {
		c->prefetch = n;
	} else {
		c->cache_max = n;
	}
	return 1;
}

bool tfs_remote_is_url(const char *path)
{
	return strncmp(path, "http://", 7) == 0 ||
	       strncmp(path, "https://", 8) == 0 ||
	       strncmp(path, "s3://", 5) == 0 || strncmp(path, "hf://", 5) == 0;
}

char *tfs_remote_redact(const char *url)
{
	const char *scheme = strstr(url, "://"), *host, *at, *end;
	char *out;
	size_t n;

	if (!scheme)
		return strdup(url);
	host = scheme + 3;
	end = host + strcspn(host, "?#");
	at = memchr(host, '@', (size_t)(end - host));
	if (at && (size_t)(at - host) < strcspn(host, "/"))
		host = at + 1; /* user:password@ */
	n = (size_t)(scheme + 3 - url) + (size_t)(end - host);
	out = malloc(n + 1);
	if (!out)
		return NULL;
	memcpy(out, url, (size_t)(scheme + 3 - url));
	memcpy(out + (scheme + 3 - url), host, (size_t)(end - host));
	out[n] = '\0';
	return out;
}
