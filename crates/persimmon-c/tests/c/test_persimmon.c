/*
 * test_persimmon.c — exercises every function of persimmon.h, including bad
 * input, from C. Usage: test_persimmon DIR (an empty scratch directory; the
 * pools are created in it). Prints one line per failed check and a summary
 * "N passed, M failed"; exits 0 only when every check passed.
 *
 * Run by `cargo test -p persimmon-c --test c_api`, which compiles it with
 * -Wall -Wextra -Werror against libpersimmon.a and against libpersimmon.so.
 */
#include "persimmon.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      passed++;                                                                \
    } else {                                                                   \
      failed++;                                                                \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, \
              __LINE__, #cond, persimmon_errmsg());                           \
    }                                                                          \
  } while (0)

/* Checks that `expr` returns the status `want`, naming both on failure. */
#define CHECK_RC(expr, want)                                                   \
  do {                                                                         \
    int rc_ = (expr);                                                          \
    if (rc_ == (want)) {                                                       \
      passed++;                                                                \
    } else {                                                                   \
      failed++;                                                                \
      fprintf(stderr, "%s:%d: %s returned %d (%s), wanted %d (%s); last error: %s\n", \
              __FILE__, __LINE__, #expr, rc_, persimmon_strerror(rc_), (want),  \
              persimmon_strerror(want), persimmon_errmsg());                   \
    }                                                                          \
  } while (0)

#define K(s) (const uint8_t *)(s), strlen(s)

static char dir[512];

static const char *pool_path(const char *name) {
  static char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static persimmon_db *open_pool(const char *name, bool ordered) {
  persimmon_options o;
  persimmon_db *db = NULL;
  CHECK_RC(persimmon_options_init(&o), PERSIMMON_OK);
  o.pool_bytes_initial = 8u << 20;
  o.ordered_index = ordered;
  CHECK_RC(persimmon_open(pool_path(name), &o, &db), PERSIMMON_OK);
  CHECK(db != NULL);
  return db;
}

/* The value of a string key as a NUL-terminated string (static buffer). */
static const char *get_str(persimmon_db *db, const char *key) {
  static char buf[256];
  size_t len = 0;
  int rc = persimmon_get(db, K(key), (uint8_t *)buf, sizeof buf - 1, &len);
  if (rc != PERSIMMON_OK) return NULL;
  buf[len] = 0;
  return buf;
}

static void test_codes_and_messages(void) {
  CHECK(strcmp(persimmon_strerror(PERSIMMON_OK), "ok") == 0);
  CHECK(strcmp(persimmon_strerror(PERSIMMON_LOCKED), "pool is already open") == 0);
  CHECK(strcmp(persimmon_strerror(-5), "unknown status code") == 0);
  CHECK(strcmp(persimmon_strerror(10000), "unknown status code") == 0);
  CHECK(persimmon_errmsg() != NULL);
}

static void test_options(void) {
  persimmon_options o;
  memset(&o, 0xab, sizeof o);
  CHECK_RC(persimmon_options_init(NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK(strstr(persimmon_errmsg(), "options") != NULL);
  CHECK_RC(persimmon_options_init(&o), PERSIMMON_OK);
  CHECK(o.create == true);
  CHECK(o.ordered_index == false);
  CHECK(o.point_index == PERSIMMON_POINT_INDEX_PM);
  CHECK(o.pool_bytes_initial == 64u << 20);
  CHECK(o.pool_bytes_max == (uint64_t)64 << 30);
  CHECK(o.data_dir == NULL);
  CHECK(o.lanes >= 1);
}

static void test_open_failures(void) {
  persimmon_options o;
  persimmon_db *db = (persimmon_db *)&o; /* must be reset to NULL on failure */
  persimmon_options_init(&o);

  CHECK_RC(persimmon_open(NULL, NULL, &db), PERSIMMON_INVALID_ARGUMENT);
  CHECK(db == NULL);
  CHECK_RC(persimmon_open("", NULL, &db), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_open(pool_path("x.pool"), NULL, NULL), PERSIMMON_INVALID_ARGUMENT);

  /* A file that is not a pool. */
  FILE *f = fopen(pool_path("not-a-pool"), "wb");
  CHECK(f != NULL);
  for (int i = 0; f && i < 1 << 16; i++) fputc('x', f);
  if (f) fclose(f);
  db = (persimmon_db *)&o;
  CHECK_RC(persimmon_open(pool_path("not-a-pool"), &o, &db), PERSIMMON_NOT_A_POOL);
  CHECK(db == NULL);
  CHECK(strstr(persimmon_errmsg(), "not a Persimmon pool") != NULL);

  /* A missing pool without create. */
  o.create = false;
  CHECK_RC(persimmon_open(pool_path("missing.pool"), &o, &db), PERSIMMON_POOL_NOT_FOUND);
  o.create = true;

  /* Options C can set but Rust cannot use. */
  o.point_index = 7;
  CHECK_RC(persimmon_open(pool_path("bad.pool"), &o, &db), PERSIMMON_INVALID_ARGUMENT);
  CHECK(strstr(persimmon_errmsg(), "point_index 7") != NULL);
  o.point_index = PERSIMMON_POINT_INDEX_DRAM; /* needs the ordered index */
  CHECK_RC(persimmon_open(pool_path("bad.pool"), &o, &db), PERSIMMON_INVALID_OPTIONS);
  o.point_index = PERSIMMON_POINT_INDEX_PM;
  o.segment_bytes = 12345; /* not a power of two */
  CHECK_RC(persimmon_open(pool_path("bad.pool"), &o, &db), PERSIMMON_INVALID_OPTIONS);
}

static void test_null_handles(void) {
  uint8_t buf[8];
  size_t len;
  uint64_t n;
  bool b;
  persimmon_iter *it;
  persimmon_stats_summary st;
  CHECK_RC(persimmon_get(NULL, K("k"), buf, sizeof buf, &len), PERSIMMON_INVALID_ARGUMENT);
  CHECK(strcmp(persimmon_errmsg(), "db is NULL") == 0);
  CHECK_RC(persimmon_put(NULL, K("k"), K("v")), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_put_with_deadline(NULL, K("k"), K("v"), 1), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_put_with_ttl(NULL, K("k"), K("v"), 1), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_delete(NULL, K("k"), &b), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_contains(NULL, K("k"), &b), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_len(NULL, &n), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_now_ms(NULL, &n), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_iter_new(NULL, &it), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_range(NULL, NULL, 0, NULL, 0, false, &it), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_prefix(NULL, K("p"), &it), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_iter_next(NULL, NULL, NULL, NULL, NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_stats(NULL, &st), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_stats_json(NULL, NULL, 0, &len), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_check(NULL, NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_write(NULL, NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_batch_put(NULL, K("k"), K("v")), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_batch_len(NULL, &len), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_batch_clear(NULL), PERSIMMON_INVALID_ARGUMENT);
  /* Freeing or closing NULL is a no-op, as with free(). */
  CHECK_RC(persimmon_close(NULL), PERSIMMON_OK);
  CHECK_RC(persimmon_iter_free(NULL), PERSIMMON_OK);
  CHECK_RC(persimmon_batch_free(NULL), PERSIMMON_OK);
}

static void count_value(void *ctx, const uint8_t *value, size_t value_len) {
  size_t *seen = ctx;
  seen[0]++;
  seen[1] = value_len;
  seen[2] = value_len >= 5 && memcmp(value, "hello", 5) == 0;
}

static void test_point(persimmon_db *db) {
  uint8_t buf[16];
  size_t len = 99;
  bool b = false;
  CHECK_RC(persimmon_put(db, K("greeting"), K("hello world")), PERSIMMON_OK);

  CHECK_RC(persimmon_get(db, K("greeting"), buf, sizeof buf, &len), PERSIMMON_OK);
  CHECK(len == 11 && memcmp(buf, "hello world", 11) == 0);

  /* Too small: nothing copied, the length needed reported. */
  memset(buf, '#', sizeof buf);
  CHECK_RC(persimmon_get(db, K("greeting"), buf, 4, &len), PERSIMMON_BUFFER_TOO_SMALL);
  CHECK(len == 11);
  CHECK(buf[0] == '#');
  CHECK(strstr(persimmon_errmsg(), "11 bytes") != NULL);
  CHECK_RC(persimmon_get(db, K("greeting"), NULL, 0, &len), PERSIMMON_BUFFER_TOO_SMALL);
  CHECK(len == 11);
  CHECK_RC(persimmon_get(db, K("greeting"), NULL, 5, &len), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_get(db, K("greeting"), buf, sizeof buf, NULL), PERSIMMON_INVALID_ARGUMENT);

  /* Absent. */
  len = 99;
  CHECK_RC(persimmon_get(db, K("nobody"), buf, sizeof buf, &len), PERSIMMON_NOT_FOUND);
  CHECK(len == 0);

  /* Empty value, and the empty key (NULL with length 0). */
  CHECK_RC(persimmon_put(db, K("empty"), NULL, 0), PERSIMMON_OK);
  CHECK_RC(persimmon_get(db, K("empty"), NULL, 0, &len), PERSIMMON_OK);
  CHECK(len == 0);
  CHECK_RC(persimmon_put(db, NULL, 0, K("for the empty key")), PERSIMMON_OK);
  CHECK_RC(persimmon_get(db, NULL, 0, NULL, 0, &len), PERSIMMON_BUFFER_TOO_SMALL);
  CHECK(len == 17);

  /* Bad pointers and lengths: refused before anything is read. */
  CHECK_RC(persimmon_put(db, NULL, 3, K("v")), PERSIMMON_INVALID_ARGUMENT);
  CHECK(strstr(persimmon_errmsg(), "key is NULL") != NULL);
  CHECK_RC(persimmon_put(db, K("k"), NULL, 3), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_put(db, (const uint8_t *)"k", PERSIMMON_MAX_KEY_BYTES + 1, K("v")),
           PERSIMMON_KEY_TOO_LARGE);
  CHECK(strstr(persimmon_errmsg(), "65537") != NULL);
  CHECK_RC(persimmon_get(db, (const uint8_t *)"k", (size_t)-1, buf, sizeof buf, &len),
           PERSIMMON_KEY_TOO_LARGE);
  CHECK_RC(persimmon_put(db, K("k"), (const uint8_t *)"v", PERSIMMON_MAX_VALUE_BYTES + 1),
           PERSIMMON_VALUE_TOO_LARGE);
  CHECK_RC(persimmon_put(db, K("k"), (const uint8_t *)"v", (size_t)-1), PERSIMMON_VALUE_TOO_LARGE);

  /* A key of exactly the limit works. */
  uint8_t *big = malloc(PERSIMMON_MAX_KEY_BYTES);
  CHECK(big != NULL);
  if (big) {
    memset(big, 'K', PERSIMMON_MAX_KEY_BYTES);
    CHECK_RC(persimmon_put(db, big, PERSIMMON_MAX_KEY_BYTES, K("big key")), PERSIMMON_OK);
    CHECK_RC(persimmon_contains(db, big, PERSIMMON_MAX_KEY_BYTES, &b), PERSIMMON_OK);
    CHECK(b);
    CHECK_RC(persimmon_delete(db, big, PERSIMMON_MAX_KEY_BYTES, NULL), PERSIMMON_OK);
    free(big);
  }

  /* Zero-copy read. */
  size_t seen[3] = {0, 0, 0};
  CHECK_RC(persimmon_get_with(db, K("greeting"), count_value, seen), PERSIMMON_OK);
  CHECK(seen[0] == 1 && seen[1] == 11 && seen[2] == 1);
  CHECK_RC(persimmon_get_with(db, K("nobody"), count_value, seen), PERSIMMON_NOT_FOUND);
  CHECK(seen[0] == 1);
  CHECK_RC(persimmon_get_with(db, K("greeting"), NULL, seen), PERSIMMON_INVALID_ARGUMENT);

  /* contains, delete. */
  CHECK_RC(persimmon_contains(db, K("greeting"), &b), PERSIMMON_OK);
  CHECK(b);
  CHECK_RC(persimmon_contains(db, K("greeting"), NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_delete(db, K("greeting"), &b), PERSIMMON_OK);
  CHECK(b);
  CHECK_RC(persimmon_delete(db, K("greeting"), &b), PERSIMMON_OK);
  CHECK(!b);
  CHECK_RC(persimmon_delete(db, K("greeting"), NULL), PERSIMMON_OK);
  CHECK_RC(persimmon_contains(db, K("greeting"), &b), PERSIMMON_OK);
  CHECK(!b);
}

static void test_deadlines(persimmon_db *db) {
  uint64_t now = 0;
  bool b = true;
  CHECK_RC(persimmon_now_ms(db, &now), PERSIMMON_OK);
  CHECK(now > 1700000000000ull); /* after November 2023 */
  CHECK_RC(persimmon_now_ms(db, NULL), PERSIMMON_INVALID_ARGUMENT);

  CHECK_RC(persimmon_put_with_deadline(db, K("past"), K("v"), now - 1000), PERSIMMON_OK);
  CHECK_RC(persimmon_contains(db, K("past"), &b), PERSIMMON_OK);
  CHECK(!b);
  CHECK_RC(persimmon_put_with_deadline(db, K("later"), K("v"), now + 3600000), PERSIMMON_OK);
  CHECK_RC(persimmon_contains(db, K("later"), &b), PERSIMMON_OK);
  CHECK(b);
  CHECK_RC(persimmon_put_with_deadline(db, K("never"), K("v"), PERSIMMON_MAX_DEADLINE_MS + 1),
           PERSIMMON_DEADLINE_TOO_FAR);
  CHECK_RC(persimmon_put_with_ttl(db, K("ttl"), K("v"), 3600000), PERSIMMON_OK);
  CHECK_RC(persimmon_contains(db, K("ttl"), &b), PERSIMMON_OK);
  CHECK(b);
  CHECK_RC(persimmon_put_with_ttl(db, K("ttl"), K("v"), 0), PERSIMMON_OK);
  CHECK_RC(persimmon_contains(db, K("ttl"), &b), PERSIMMON_OK);
  CHECK(!b);
  /* A plain put clears the deadline; the key stays. */
  CHECK_RC(persimmon_put(db, K("later"), K("v2")), PERSIMMON_OK);
  CHECK(get_str(db, "later") != NULL && strcmp(get_str(db, "later"), "v2") == 0);
}

/* An update callback: a decimal counter; ctx says what to answer. */
struct counter {
  int action;      /* what to return */
  int calls;
  bool was_present;
  char out[32];
};

static int bump(void *ctx, const uint8_t *value, size_t value_len, bool present,
                const uint8_t **new_value, size_t *new_value_len) {
  struct counter *c = ctx;
  char old[32] = "0";
  c->calls++;
  c->was_present = present;
  if (present && value_len < sizeof old) {
    memcpy(old, value, value_len);
    old[value_len] = 0;
  }
  snprintf(c->out, sizeof c->out, "%ld", atol(old) + 1);
  *new_value = (const uint8_t *)c->out;
  *new_value_len = strlen(c->out);
  return c->action;
}

static int put_too_much(void *ctx, const uint8_t *value, size_t value_len, bool present,
                        const uint8_t **new_value, size_t *new_value_len) {
  (void)ctx, (void)value, (void)value_len, (void)present;
  *new_value = NULL;
  *new_value_len = 3;
  return PERSIMMON_UPDATE_PUT;
}

static void test_update(persimmon_db *db) {
  struct counter c = {PERSIMMON_UPDATE_PUT, 0, true, ""};
  CHECK_RC(persimmon_update(db, K("hits"), bump, &c), PERSIMMON_OK);
  CHECK(c.calls == 1 && !c.was_present);
  CHECK(get_str(db, "hits") && strcmp(get_str(db, "hits"), "1") == 0);
  for (int i = 0; i < 9; i++) persimmon_update(db, K("hits"), bump, &c);
  CHECK(c.was_present);
  CHECK(get_str(db, "hits") && strcmp(get_str(db, "hits"), "10") == 0);

  c.action = PERSIMMON_UPDATE_KEEP;
  CHECK_RC(persimmon_update(db, K("hits"), bump, &c), PERSIMMON_OK);
  CHECK(get_str(db, "hits") && strcmp(get_str(db, "hits"), "10") == 0);

  c.action = 42; /* no PERSIMMON_UPDATE_* code: refused, key unchanged */
  CHECK_RC(persimmon_update(db, K("hits"), bump, &c), PERSIMMON_INVALID_ARGUMENT);
  CHECK(strstr(persimmon_errmsg(), "returned 42") != NULL);
  CHECK(get_str(db, "hits") && strcmp(get_str(db, "hits"), "10") == 0);
  CHECK_RC(persimmon_update(db, K("hits"), put_too_much, NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK(get_str(db, "hits") && strcmp(get_str(db, "hits"), "10") == 0);

  c.action = PERSIMMON_UPDATE_DELETE;
  CHECK_RC(persimmon_update(db, K("hits"), bump, &c), PERSIMMON_OK);
  CHECK(get_str(db, "hits") == NULL);
  CHECK_RC(persimmon_update(db, K("hits"), NULL, NULL), PERSIMMON_INVALID_ARGUMENT);
}

static void test_batch(persimmon_db *db) {
  persimmon_batch *batch = NULL;
  size_t n = 0;
  uint64_t keys_before = 0, keys_after = 0;
  CHECK_RC(persimmon_batch_new(NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_batch_new(&batch), PERSIMMON_OK);
  CHECK_RC(persimmon_put(db, K("b:gone"), K("x")), PERSIMMON_OK);
  CHECK_RC(persimmon_batch_put(batch, K("b:1"), K("one")), PERSIMMON_OK);
  CHECK_RC(persimmon_batch_put(batch, K("b:2"), K("two")), PERSIMMON_OK);
  CHECK_RC(persimmon_batch_put_with_deadline(batch, K("b:3"), K("three"), PERSIMMON_MAX_DEADLINE_MS),
           PERSIMMON_OK);
  CHECK_RC(persimmon_batch_delete(batch, K("b:gone")), PERSIMMON_OK);
  CHECK_RC(persimmon_batch_put(batch, (const uint8_t *)"k", PERSIMMON_MAX_KEY_BYTES + 1, K("v")),
           PERSIMMON_KEY_TOO_LARGE);
  CHECK_RC(persimmon_batch_len(batch, &n), PERSIMMON_OK);
  CHECK(n == 4);
  CHECK_RC(persimmon_len(db, &keys_before), PERSIMMON_OK);
  CHECK_RC(persimmon_write(db, batch), PERSIMMON_OK);
  CHECK_RC(persimmon_len(db, &keys_after), PERSIMMON_OK);
  CHECK(keys_after == keys_before + 2);
  CHECK(get_str(db, "b:1") && strcmp(get_str(db, "b:1"), "one") == 0);
  CHECK(get_str(db, "b:3") && strcmp(get_str(db, "b:3"), "three") == 0);
  CHECK(get_str(db, "b:gone") == NULL);
  CHECK_RC(persimmon_write(db, NULL), PERSIMMON_INVALID_ARGUMENT);

  /* Over the operation limit: refused whole, nothing written. */
  CHECK_RC(persimmon_batch_clear(batch), PERSIMMON_OK);
  CHECK_RC(persimmon_batch_len(batch, &n), PERSIMMON_OK);
  CHECK(n == 0);
  char key[32];
  for (int i = 0; i <= PERSIMMON_MAX_BATCH_OPS; i++) {
    snprintf(key, sizeof key, "huge:%d", i);
    persimmon_batch_put(batch, K(key), K("v"));
  }
  CHECK_RC(persimmon_batch_len(batch, &n), PERSIMMON_OK);
  CHECK(n == PERSIMMON_MAX_BATCH_OPS + 1);
  CHECK_RC(persimmon_write(db, batch), PERSIMMON_BATCH_TOO_LARGE);
  CHECK(get_str(db, "huge:0") == NULL);
  CHECK_RC(persimmon_batch_free(batch), PERSIMMON_OK);
}

static void test_iteration(persimmon_db *db) {
  persimmon_iter *it = NULL;
  const uint8_t *k, *v;
  size_t klen, vlen;
  uint64_t len = 0, seen = 0;
  int rc;
  CHECK_RC(persimmon_len(db, &len), PERSIMMON_OK);
  CHECK(len > 0);
  CHECK_RC(persimmon_iter_new(db, NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_iter_new(db, &it), PERSIMMON_OK);
  bool found_b1 = false;
  while ((rc = persimmon_iter_next(it, &k, &klen, &v, &vlen)) == PERSIMMON_OK) {
    seen++;
    if (klen == 3 && memcmp(k, "b:1", 3) == 0)
      found_b1 = vlen == 3 && memcmp(v, "one", 3) == 0;
  }
  CHECK(rc == PERSIMMON_END);
  CHECK(seen == len);
  CHECK(found_b1);
  CHECK_RC(persimmon_iter_next(it, &k, &klen, &v, &vlen), PERSIMMON_END);

  /* A db with a live iterator refuses to close; it stays usable. */
  CHECK_RC(persimmon_close(db), PERSIMMON_BUSY);
  CHECK(strstr(persimmon_errmsg(), "1 iterator") != NULL);
  CHECK_RC(persimmon_contains(db, K("b:1"), &found_b1), PERSIMMON_OK);
  CHECK_RC(persimmon_iter_free(it), PERSIMMON_OK);

  /* Keys only: NULL value outputs. */
  CHECK_RC(persimmon_iter_new(db, &it), PERSIMMON_OK);
  CHECK_RC(persimmon_iter_next(it, &k, &klen, NULL, NULL), PERSIMMON_OK);
  CHECK(klen > 0 || k != NULL);
  CHECK_RC(persimmon_iter_free(it), PERSIMMON_OK);

  /* Ordered reads need the ordered index. */
  it = (persimmon_iter *)&len;
  CHECK_RC(persimmon_range(db, NULL, 0, NULL, 0, false, &it), PERSIMMON_NO_ORDERED_INDEX);
  CHECK(it == NULL);
  CHECK_RC(persimmon_prefix(db, K("b:"), &it), PERSIMMON_NO_ORDERED_INDEX);
  CHECK(strstr(persimmon_errmsg(), "no ordered index") != NULL);
}

/* Collects an iterator's keys as "k1,k2,..." and frees it. */
static const char *collect(persimmon_iter *it) {
  static char out[256];
  const uint8_t *k, *v;
  size_t klen, vlen, at = 0;
  int rc;
  out[0] = 0;
  while ((rc = persimmon_iter_next(it, &k, &klen, &v, &vlen)) == PERSIMMON_OK) {
    if (at + klen + 2 >= sizeof out) break;
    if (at) out[at++] = ',';
    memcpy(out + at, k, klen);
    at += klen;
    out[at] = 0;
    if (vlen != 1 || v[0] != k[0]) return "a value does not match its key";
  }
  if (rc != PERSIMMON_END && rc != PERSIMMON_OK) return "iteration failed";
  persimmon_iter_free(it);
  return out;
}

static void test_ordered(void) {
  persimmon_db *db = open_pool("ordered.pool", true);
  persimmon_iter *it = NULL;
  if (!db) return;
  const char *keys[] = {"c", "a1", "b2", "a2", "b1"};
  for (int i = 0; i < 5; i++) CHECK_RC(persimmon_put(db, K(keys[i]), (const uint8_t *)keys[i], 1), PERSIMMON_OK);

  CHECK_RC(persimmon_range(db, NULL, 0, NULL, 0, false, &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "a1,a2,b1,b2,c") == 0);
  CHECK_RC(persimmon_range(db, K("a2"), K("c"), false, &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "a2,b1,b2") == 0);
  CHECK_RC(persimmon_range(db, K("a2"), K("c"), true, &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "b2,b1,a2") == 0);
  CHECK_RC(persimmon_range(db, K("b"), NULL, 0, false, &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "b1,b2,c") == 0);
  CHECK_RC(persimmon_range(db, K("c"), K("a"), false, &it), PERSIMMON_OK); /* inverted: empty */
  CHECK(strcmp(collect(it), "") == 0);
  CHECK_RC(persimmon_range(db, K("c"), K("a"), true, &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "") == 0);
  CHECK_RC(persimmon_range(db, K("b1"), K("b1"), false, &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "") == 0);
  CHECK_RC(persimmon_range(db, NULL, 3, NULL, 0, false, &it), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_prefix(db, K("b"), &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "b1,b2") == 0);
  CHECK_RC(persimmon_prefix(db, K("zz"), &it), PERSIMMON_OK);
  CHECK(strcmp(collect(it), "") == 0);

  /* Two live iterators: close is refused until both are freed. */
  persimmon_iter *a = NULL, *b = NULL;
  CHECK_RC(persimmon_prefix(db, K("a"), &a), PERSIMMON_OK);
  CHECK_RC(persimmon_range(db, NULL, 0, NULL, 0, true, &b), PERSIMMON_OK);
  CHECK_RC(persimmon_close(db), PERSIMMON_BUSY);
  CHECK_RC(persimmon_iter_free(a), PERSIMMON_OK);
  CHECK_RC(persimmon_close(db), PERSIMMON_BUSY);
  CHECK(strcmp(collect(b), "c,b2,b1,a2,a1") == 0); /* frees b */
  CHECK_RC(persimmon_close(db), PERSIMMON_OK);
}

static void test_stats_and_check(persimmon_db *db) {
  persimmon_stats_summary st;
  persimmon_check_report report;
  uint64_t len = 0;
  size_t json_len = 0;
  CHECK_RC(persimmon_len(db, &len), PERSIMMON_OK);
  CHECK_RC(persimmon_len(db, NULL), PERSIMMON_INVALID_ARGUMENT);
  CHECK_RC(persimmon_stats(db, &st), PERSIMMON_OK);
  CHECK(st.keys == len);
  CHECK(st.pool_bytes >= 8u << 20 && st.pool_bytes <= st.pool_bytes_max);
  CHECK(st.live_bytes > 0 && st.live_bytes <= st.used_bytes);
  CHECK(!st.ordered_index);
  CHECK_RC(persimmon_stats(db, NULL), PERSIMMON_INVALID_ARGUMENT);

  CHECK_RC(persimmon_stats_json(db, NULL, 0, &json_len), PERSIMMON_BUFFER_TOO_SMALL);
  CHECK(json_len > 100);
  char *json = malloc(json_len + 1);
  CHECK(json != NULL);
  if (json) {
    CHECK_RC(persimmon_stats_json(db, json, json_len, &json_len), PERSIMMON_BUFFER_TOO_SMALL);
    CHECK_RC(persimmon_stats_json(db, json, json_len + 1, &json_len), PERSIMMON_OK);
    CHECK(strlen(json) == json_len);
    CHECK(json[0] == '{' && json[json_len - 1] == '}');
    char want[64];
    snprintf(want, sizeof want, "\"keys\":%llu,", (unsigned long long)len);
    CHECK(strstr(json, want) != NULL);
    CHECK(strstr(json, "\"ordered_index\":false") != NULL);
    CHECK(strstr(json, "\"data_dir\":null") != NULL);
    CHECK(strstr(json, "\"cache_policy\":\"") != NULL);
    free(json);
  }

  memset(&report, 0xff, sizeof report);
  CHECK_RC(persimmon_check(db, &report), PERSIMMON_OK);
  CHECK(report.errors == 0);
  CHECK(report.keys == len);
  CHECK(report.log_segments >= 1);
  CHECK_RC(persimmon_check(db, NULL), PERSIMMON_OK);
}

/* Threads share one db: each writes and reads back its own keys. */
struct worker {
  persimmon_db *db;
  int id;
  int bad;
  char errmsg[128];
};

static void *work(void *arg) {
  struct worker *w = arg;
  char key[32], val[32], got[32];
  size_t len;
  for (int i = 0; i < 2000; i++) {
    snprintf(key, sizeof key, "t%d:%d", w->id, i);
    snprintf(val, sizeof val, "v%d", i * w->id);
    if (persimmon_put(w->db, K(key), K(val)) != PERSIMMON_OK) w->bad++;
    if (persimmon_get(w->db, K(key), (uint8_t *)got, sizeof got, &len) != PERSIMMON_OK ||
        len != strlen(val) || memcmp(got, val, len) != 0)
      w->bad++;
  }
  /* Each thread has its own last error. */
  persimmon_get(NULL, K("x"), NULL, 0, &len);
  snprintf(w->errmsg, sizeof w->errmsg, "%s", persimmon_errmsg());
  return NULL;
}

static void test_threads(persimmon_db *db) {
  pthread_t t[4];
  struct worker w[4];
  uint64_t before = 0, after = 0;
  persimmon_put(db, (const uint8_t *)"k", PERSIMMON_MAX_KEY_BYTES + 1, K("v")); /* main's error */
  CHECK_RC(persimmon_len(db, &before), PERSIMMON_OK);
  for (int i = 0; i < 4; i++) {
    w[i] = (struct worker){db, i + 1, 0, ""};
    CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
  }
  /* Iterate while they write: every key present throughout is returned. */
  persimmon_iter *it = NULL;
  uint64_t seen = 0;
  int rc;
  CHECK_RC(persimmon_iter_new(db, &it), PERSIMMON_OK);
  while ((rc = persimmon_iter_next(it, NULL, NULL, NULL, NULL)) == PERSIMMON_OK) seen++;
  CHECK(rc == PERSIMMON_END);
  CHECK(seen >= before);
  CHECK_RC(persimmon_iter_free(it), PERSIMMON_OK);
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(w[i].bad == 0);
    CHECK(strcmp(w[i].errmsg, "db is NULL") == 0);
  }
  CHECK(strstr(persimmon_errmsg(), "65537") != NULL);
  CHECK_RC(persimmon_len(db, &after), PERSIMMON_OK);
  CHECK(after == before + 4 * 2000);
}

/* A pool with an SSD tier: data_dir crosses from C, a large value lives there. */
static void test_tier(void) {
  persimmon_options o;
  persimmon_db *db = NULL;
  char data_dir[600];
  snprintf(data_dir, sizeof data_dir, "%s/tier-data", dir);
  persimmon_options_init(&o);
  o.pool_bytes_initial = 8u << 20;
  o.data_dir = data_dir;
  o.tier_threshold = 4096;
  CHECK_RC(persimmon_open(pool_path("tier.pool"), &o, &db), PERSIMMON_OK);
  if (!db) return;
  static uint8_t big[10000], back[10000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7);
  size_t len = 0;
  CHECK_RC(persimmon_put(db, K("big"), big, sizeof big), PERSIMMON_OK);
  CHECK_RC(persimmon_get(db, K("big"), back, sizeof back, &len), PERSIMMON_OK);
  CHECK(len == sizeof big && memcmp(big, back, len) == 0);
  persimmon_check_report report;
  CHECK_RC(persimmon_check(db, &report), PERSIMMON_OK);
  CHECK(report.ssd_extents == 1);
  char json[8192];
  CHECK_RC(persimmon_stats_json(db, json, sizeof json, &len), PERSIMMON_OK);
  CHECK(strstr(json, "tier-data\"") != NULL);
  CHECK_RC(persimmon_close(db), PERSIMMON_OK);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[1]);

  test_codes_and_messages();
  test_options();
  test_open_failures();
  test_null_handles();

  persimmon_db *db = open_pool("main.pool", false);
  if (db) {
    /* One handle per pool file: a second open is refused. */
    persimmon_db *again = (persimmon_db *)&again;
    CHECK_RC(persimmon_open(pool_path("main.pool"), NULL, &again), PERSIMMON_LOCKED);
    CHECK(again == NULL);
    CHECK(strstr(persimmon_errmsg(), "already open") != NULL);

    test_point(db);
    test_deadlines(db);
    test_update(db);
    test_batch(db);
    test_iteration(db);
    test_stats_and_check(db);
    test_threads(db);

    uint64_t len = 0;
    CHECK_RC(persimmon_len(db, &len), PERSIMMON_OK);
    CHECK_RC(persimmon_close(db), PERSIMMON_OK);

    /* Reopened: everything written is there. */
    db = open_pool("main.pool", false);
    uint64_t again_len = 0;
    CHECK_RC(persimmon_len(db, &again_len), PERSIMMON_OK);
    CHECK(again_len == len);
    CHECK(get_str(db, "b:1") && strcmp(get_str(db, "b:1"), "one") == 0);
    CHECK(get_str(db, "t4:1999") && strcmp(get_str(db, "t4:1999"), "v7996") == 0);
    CHECK_RC(persimmon_close(db), PERSIMMON_OK);
  }
  test_ordered();
  test_tier();

  printf("persimmon C API: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
