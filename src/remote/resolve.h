/* SPDX-License-Identifier: MIT */
/*
 * From a URL the user gives (http(s)://, s3://, hf://) to the HTTP request
 * that fetches it: the URL, extra headers, SigV4 signing (docs/remote.md).
 */
#ifndef TFS_REMOTE_RESOLVE_H
#define TFS_REMOTE_RESOLVE_H

#include <stdbool.h>

#include <curl/curl.h>

struct tfs_diag;

struct tfs_remote_target {
	char *url;		    /* what is fetched */
	struct curl_slist *headers; /* added to every request (secret) */
	char *userpwd;		    /* SigV4 credentials "key:secret" */
	char *sigv4;		    /* CURLOPT_AWS_SIGV4, e.g. aws:amz:R:s3 */
};

/*
 * Resolve @url; hf:// asks the Hub which commit the revision is now (one
 * request; @insecure, @timeout_ms for it).  0 or -errno with @d filled.
 */
int tfs_remote_resolve(const char *url, struct tfs_remote_target *t,
		       bool insecure, long timeout_ms, struct tfs_diag *d);
void tfs_remote_target_free(struct tfs_remote_target *t);

/*
 * Is @url a remote directory (s3://BUCKET/ or s3://BUCKET/PREFIX/ listed
 * by ListObjectsV2, hf://ORG/REPO[@REV] by the Hub's tree API at the
 * revision's commit)?  1 with *@dir and *@index, the sharded model's index
 * it holds or NULL when it holds none (see tfs_source_url_index_finder), 0
 * if it names one object, -errno.
 */
int tfs_remote_find_index_with(const char *url, bool insecure, long timeout_ms,
			       char **dir, char **index, struct tfs_diag *d);

/*
 * Every file under the remote directory @dir (as *@dir above: hf:// at a
 * commit), as sorted paths relative to it, malloc'd.  0 or -errno.
 */
int tfs_remote_list_with(const char *dir, bool insecure, long timeout_ms,
			 char ***names, size_t *n, struct tfs_diag *d);

/* S3 key or Hub path to a URL path: RFC 3986 unreserved kept, '/' kept */
char *tfs_remote_escape_path(const char *path);

#endif
