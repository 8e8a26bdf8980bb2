/*
 * verify_million.c — puts N keys (default 10^6) into a fresh pool, reads
 * each back and verifies it, and prints the rates.
 *
 *   cc -O2 verify_million.c $(pkg-config --cflags --libs persimmon) -o verify_million
 *   ./verify_million /dev/shm/verify.pool [N]
 *
 * The pool file is created (an existing one is refused, so a run always
 * starts empty) and removed at the end, with its POOL_PATH.segments file. Exits 0 only if every value read
 * back is the one written.
 */
#include <persimmon.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int fail(const char *what, int rc) {
  fprintf(stderr, "%s: %s (%d): %s\n", what, persimmon_strerror(rc), rc, persimmon_errmsg());
  return 1;
}

/* Key i is "key:%010lu"; its value is 32 bytes derived from i. */
static size_t make_key(char *buf, unsigned long i) { return (size_t)sprintf(buf, "key:%010lu", i); }
static size_t make_value(char *buf, unsigned long i) {
  return (size_t)sprintf(buf, "value-%010lu-%015lu", i, i * 2654435761ul % 1000000007ul);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s POOL_PATH [N]\n", argv[0]);
    return 2;
  }
  const char *path = argv[1];
  unsigned long n = argc == 3 ? strtoul(argv[2], NULL, 10) : 1000000ul;
  if (access(path, F_OK) == 0) {
    fprintf(stderr, "%s exists; give a path for a new pool\n", path);
    return 2;
  }

  persimmon_options o;
  persimmon_options_init(&o);
  o.pool_bytes_initial = 256u << 20;
  persimmon_db *db;
  int rc = persimmon_open(path, &o, &db);
  if (rc != PERSIMMON_OK) return fail("open", rc);

  char key[32], want[64], got[64];
  double t0 = now_s();
  for (unsigned long i = 0; i < n; i++) {
    size_t klen = make_key(key, i), vlen = make_value(want, i);
    rc = persimmon_put(db, (const uint8_t *)key, klen, (const uint8_t *)want, vlen);
    if (rc != PERSIMMON_OK) return fail("put", rc);
  }
  double t1 = now_s();
  unsigned long bad = 0;
  for (unsigned long i = 0; i < n; i++) {
    size_t klen = make_key(key, i), vlen = make_value(want, i), len = 0;
    rc = persimmon_get(db, (const uint8_t *)key, klen, (uint8_t *)got, sizeof got, &len);
    if (rc != PERSIMMON_OK) return fail("get", rc);
    if (len != vlen || memcmp(got, want, len) != 0) bad++;
  }
  double t2 = now_s();

  uint64_t count = 0;
  persimmon_len(db, &count);
  persimmon_stats_summary st;
  persimmon_stats(db, &st);
  printf("keys        %lu put, %llu in the pool, %lu wrong on read-back\n", n,
         (unsigned long long)count, bad);
  printf("put         %.3f s  %.0f puts/s\n", t1 - t0, (double)n / (t1 - t0));
  printf("get+verify  %.3f s  %.0f gets/s\n", t2 - t1, (double)n / (t2 - t1));
  printf("pool        %.1f MiB file, %.1f MiB live\n", (double)st.pool_bytes / 1048576.0,
         (double)st.live_bytes / 1048576.0);

  rc = persimmon_close(db);
  if (rc != PERSIMMON_OK) return fail("close", rc);
  char segments[4096];
  snprintf(segments, sizeof segments, "%s.segments", path); /* kept beside a cleanly closed pool */
  unlink(path);
  unlink(segments);
  return bad == 0 && count == n ? 0 : 1;
}
