/*
 * test_rotate.c: the rotate: sink of examples/custom-sink, driven through
 * its ops table as the writer drives it (found with els_sink_lookup(), so
 * registration is checked too), with synthetic units in a real directory.
 * Checks that the files put back together give the stream byte for byte,
 * where files begin, a header the writer sends again after a failure,
 * keep=, numbering past what is in the directory, mode=, and what open()
 * and close() leave behind.  The program end to end, and the one-line
 * refusals, are tests/sinks/test_custom_sink.sh's job.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/resource.h>

#include "check.h"
#include "evgen.h"
#include "eventlog-sink.h"
#include "rotate.h"

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

struct rot {
    const struct els_sink_ops *ops;
    void *sink;
    struct els_sink_args args;
    char address[600], spec[800], err[512];
    const char *keys[4], *values[4];
};

/* Fill r for rotate:<case dir>/app with options "k1", "v1", ..., NULL. */
static struct els_sink_args *rot_args(struct rot *r, const char *first_key,
                                      va_list ap)
{
    memset(r, 0, sizeof *r);
    r->ops = els_sink_lookup("rotate");
    CHECK_MSG(r->ops != NULL, "scheme rotate is not registered");
    snprintf(r->address, sizeof r->address, "%s/app", check_dir);
    size_t n = 0;
    int off = snprintf(r->spec, sizeof r->spec, "rotate:%s", r->address);
    for (const char *k = first_key; k != NULL; k = va_arg(ap, const char *)) {
        CHECK(n < 4);
        r->keys[n] = k;
        r->values[n] = va_arg(ap, const char *);
        off += snprintf(r->spec + off, sizeof r->spec - (size_t)off, "%c%s=%s",
                        n ? '&' : '?', k, r->values[n]);
        n++;
    }
    r->args = (struct els_sink_args){
        .scheme = "rotate", .address = r->address, .spec = r->spec,
        .n_options = n, .option_keys = r->keys, .option_values = r->values,
        .err = r->err, .err_len = sizeof r->err,
    };
    return &r->args;
}

/* Open rotate:<case dir>/app?k1=v1&...; returns open()'s code. */
static int rot_open(struct rot *r, const char *first_key, ...)
{
    va_list ap;
    va_start(ap, first_key);
    struct els_sink_args *a = rot_args(r, first_key, ap);
    va_end(ap);
    return r->ops->open(&r->sink, a);
}

static void rot_write(struct rot *r, const void *p, size_t len)
{
    int rc = r->ops->write(r->sink, p, len);
    CHECK_MSG(rc == 0, "write of %zu bytes: %d (%s)", len, rc, els_strerror(rc));
}

static char *file_path(unsigned number)
{
    static char path[700];
    snprintf(path, sizeof path, "%s/app.%06u.eventlog", check_dir, number);
    return path;
}

/* Contents of file number; *len its size; NULL if it does not exist. */
static uint8_t *file_read(unsigned number, size_t *len)
{
    int fd = open(file_path(number), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    CHECK_OK(fstat(fd, &st) == 0 ? 0 : -errno);
    uint8_t *p = malloc((size_t)st.st_size + 1);
    CHECK(p != NULL);
    CHECK_INT(read(fd, p, (size_t)st.st_size), ==, st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

/* How many entries of the case directory have names starting with "app.". */
static unsigned count_app_files(void)
{
    DIR *d = opendir(check_dir);
    CHECK(d != NULL);
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, "app.", 4) == 0;
    closedir(d);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    CHECK_MSG(fd >= 0, "create %s: %s", path, strerror(errno));
    CHECK_INT(write(fd, "old", 3), ==, 3);
    close(fd);
}

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

/* Blocks of about 1500 bytes with size=4K: three to a file.  Each file is
 * the header plus whole blocks, DATA_END only at the end of the last, and
 * the files without their repeated headers are the stream. */
static void rotation_gives_back_the_stream(void)
{
    struct rot r;
    CHECK_OK(rot_open(&r, "size", "4K", NULL));
    struct evgen_buf h = evgen_header();
    struct evgen_buf stream = { 0 };
    evgen_put(&stream, h.p, h.len);
    rot_write(&r, h.p, h.len);
    for (unsigned i = 0; i < 10; i++) {
        struct evgen_buf b = evgen_block((uint16_t)(i % 2), 1000 * i, 1, "u", 1500);
        rot_write(&r, b.p, b.len);
        evgen_put(&stream, b.p, b.len);
        free(b.p);
    }
    rot_write(&r, evgen_data_end, 2);
    evgen_put(&stream, evgen_data_end, 2);
    r.ops->close(r.sink);

    struct evgen_buf joined = { 0 };
    unsigned files = 0;
    size_t len;
    uint8_t *p;
    while ((p = file_read(files + 1, &len)) != NULL) {
        files++;
        CHECK(len > h.len && memcmp(p, h.p, h.len) == 0);
        CHECK_INT(len, <=, 4096);
        uint8_t *next = file_read(files + 1, &(size_t){ 0 });
        bool last = next == NULL;
        free(next);
        bool ends = p[len - 2] == 0xff && p[len - 1] == 0xff;
        CHECK_MSG(ends == last, "file %u: ends with DATA_END: %d, last: %d",
                  files, ends, last);
        if (files == 1)
            evgen_put(&joined, p, len);
        else
            evgen_put(&joined, p + h.len, len - h.len);
        free(p);
    }
    struct evgen_buf one = evgen_block(0, 0, 1, "u", 1500);
    size_t per_file = (4096 - h.len) / one.len;
    CHECK_INT(per_file, >=, 2);
    CHECK_INT(files, ==, (10 + per_file - 1) / per_file);
    free(one.p);
    CHECK_U64(joined.len, ==, stream.len);
    CHECK(memcmp(joined.p, stream.p, stream.len) == 0);
    CHECK_INT(count_app_files(), ==, files);
    free(joined.p);
    free(stream.p);
    free(h.p);
}

/* A block larger than size= goes whole into a file of its own; DATA_END
 * stays in the file it ends even when that file is full. */
static void large_block_and_data_end(void)
{
    struct rot r;
    CHECK_OK(rot_open(&r, "size", "4K", NULL));
    struct evgen_buf h = evgen_header();
    struct evgen_buf small = evgen_block(0, 1, 1, "s", 1000);
    struct evgen_buf big = evgen_block(1, 2, 1, "b", 10000);
    rot_write(&r, h.p, h.len);
    rot_write(&r, small.p, small.len);
    rot_write(&r, big.p, big.len);
    rot_write(&r, evgen_data_end, 2);
    r.ops->close(r.sink);
    size_t len1, len2;
    uint8_t *f1 = file_read(1, &len1), *f2 = file_read(2, &len2);
    CHECK(f1 != NULL && f2 != NULL);
    CHECK_U64(len1, ==, h.len + small.len);
    CHECK_U64(len2, ==, h.len + big.len + 2);
    CHECK(memcmp(f2 + h.len, big.p, big.len) == 0);
    CHECK_INT(count_app_files(), ==, 2);
    free(f1); free(f2); free(h.p); free(small.p); free(big.p);
}

/* The writer sends the header again after write() failed on it: the file
 * holds it once.  The failure comes from RLIMIT_FSIZE (SIGXFSZ ignored, in
 * this case's own process). */
static void header_sent_again_is_written_once(void)
{
    struct rot r;
    CHECK_OK(rot_open(&r, NULL));
    struct evgen_buf h = evgen_header();
    struct evgen_buf b = evgen_block(0, 1, 3, "u", 0);
    CHECK(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
    struct rlimit lim;
    CHECK_OK(getrlimit(RLIMIT_FSIZE, &lim) == 0 ? 0 : -errno);
    struct rlimit small = { (rlim_t)h.len / 2, lim.rlim_max };
    CHECK_OK(setrlimit(RLIMIT_FSIZE, &small) == 0 ? 0 : -errno);
    CHECK_INT(r.ops->write(r.sink, h.p, h.len), ==, -EFBIG);
    size_t len;
    uint8_t *p = file_read(1, &len);
    CHECK(p != NULL);
    CHECK_U64(len, ==, 0);      /* cut back, not half a header */
    free(p);
    CHECK_OK(setrlimit(RLIMIT_FSIZE, &lim) == 0 ? 0 : -errno);
    rot_write(&r, h.p, h.len);
    rot_write(&r, b.p, b.len);
    r.ops->close(r.sink);
    p = file_read(1, &len);
    CHECK(p != NULL);
    CHECK_U64(len, ==, h.len + b.len);
    CHECK(memcmp(p, h.p, h.len) == 0 && memcmp(p + h.len, b.p, b.len) == 0);
    CHECK_INT(count_app_files(), ==, 1);
    free(p); free(h.p); free(b.p);
}

/* Numbers continue past every app.<number>.eventlog name (a link too);
 * keep= removes the oldest regular files once the new file has its header,
 * and nothing else. */
static void keep_and_numbering(void)
{
    char path[700];
    for (unsigned i = 3; i <= 5; i++)
        touch(file_path(i));
    snprintf(path, sizeof path, "%s/elsewhere", check_dir);
    touch(path);
    CHECK_OK(symlink(path, file_path(9)) == 0 ? 0 : -errno);
    snprintf(path, sizeof path, "%s/app.01.eventlog", check_dir);
    touch(path);

    struct rot r;
    CHECK_OK(rot_open(&r, "keep", "2", "size", "2K", NULL));
    size_t len;
    uint8_t *p = file_read(10, &len);
    CHECK(p != NULL);           /* made by open(), still empty */
    CHECK_U64(len, ==, 0);
    free(p);
    CHECK(exists(file_path(3)));   /* nothing removed before the header */

    struct evgen_buf h = evgen_header();
    struct evgen_buf b = evgen_block(0, 1, 1, "u", 1200);
    rot_write(&r, h.p, h.len);
    CHECK(!exists(file_path(3)) && !exists(file_path(4)));
    CHECK(exists(file_path(5)) && exists(file_path(10)));
    rot_write(&r, b.p, b.len);
    rot_write(&r, b.p, b.len);  /* a second 1.2K block passes 2K: file 11 */
    r.ops->close(r.sink);
    CHECK(!exists(file_path(5)));
    CHECK(exists(file_path(10)) && exists(file_path(11)));
    struct stat st;
    CHECK_OK(lstat(file_path(9), &st) == 0 ? 0 : -errno);
    CHECK(S_ISLNK(st.st_mode));
    CHECK(exists(path));        /* app.01.eventlog: not a name of ours */
    snprintf(path, sizeof path, "%s/elsewhere", check_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    char buf[8];
    CHECK_INT(read(fd, buf, sizeof buf), ==, 3);
    CHECK(memcmp(buf, "old", 3) == 0);
    close(fd);
    free(h.p); free(b.p);
}

/* mode= sets the files' mode (the umask applies; 0 here); the default is
 * 0600.  A file that never got a header is removed at close. */
static void mode_and_empty_file(void)
{
    umask(0);
    struct rot r;
    CHECK_OK(rot_open(&r, "mode", "0640", NULL));
    struct stat st;
    CHECK_OK(stat(file_path(1), &st) == 0 ? 0 : -errno);
    CHECK_INT(st.st_mode & 07777, ==, 0640);
    r.ops->close(r.sink);
    CHECK_INT(count_app_files(), ==, 0);

    CHECK_OK(rot_open(&r, NULL));
    CHECK_OK(stat(file_path(1), &st) == 0 ? 0 : -errno);
    CHECK_INT(st.st_mode & 07777, ==, 0600);
    /* A block before the header breaks the contract: refused, not written. */
    struct evgen_buf b = evgen_block(0, 1, 1, "u", 0);
    CHECK_INT(r.ops->write(r.sink, b.p, b.len), ==, -EPROTO);
    r.ops->close(r.sink);
    CHECK_INT(count_app_files(), ==, 0);
    free(b.p);
}

/* open() refusals: the code, one line, and nothing made. */
static void open_refusals(void)
{
    struct rot r;
    CHECK_INT(rot_open(&r, "size", "0", NULL), ==, ELS_EINVAL);
    CHECK_CONTAINS(r.err, "size=0");
    CHECK_INT(rot_open(&r, "size", "7T", NULL), ==, ELS_EINVAL);
    CHECK_CONTAINS(r.err, "size=7T is not a size");
    CHECK_INT(rot_open(&r, "keep", "0", NULL), ==, ELS_EINVAL);
    CHECK_CONTAINS(r.err, "keep=0 would remove");
    CHECK_INT(rot_open(&r, "keep", "1000001", NULL), ==, ELS_EINVAL);
    CHECK_INT(rot_open(&r, "mode", "8", NULL), ==, ELS_EINVAL);
    CHECK(strchr(r.err, '\n') == NULL);
    CHECK_INT(count_app_files(), ==, 0);

    struct els_sink_args *a;
    memset(&r, 0, sizeof r);
    r.ops = els_sink_lookup("rotate");
    static const struct { const char *address; int code; const char *text; } bad[] = {
        { "/nonexistent-rotate-dir/app", -ENOENT, "does not exist" },
        { "/etc/passwd/app", -ENOTDIR, "is not a directory" },
        { "app/", ELS_EINVAL, "no file name prefix" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a = &r.args;
        *a = (struct els_sink_args){
            .scheme = "rotate", .address = bad[i].address,
            .spec = bad[i].address, .err = r.err, .err_len = sizeof r.err,
        };
        CHECK_INT(r.ops->open(&r.sink, a), ==, bad[i].code);
        CHECK_CONTAINS(r.err, bad[i].text);
    }
}

/* Registered by the constructor already: a second registration is
 * refused with ELS_EEXIST, as rotate.h says. */
static void registered_once(void)
{
    CHECK(els_sink_lookup("rotate") != NULL);
    CHECK_INT(rotate_sink_register(), ==, ELS_EEXIST);
}

static const struct check_case cases[] = {
    CHECK_CASE(rotation_gives_back_the_stream),
    CHECK_CASE(large_block_and_data_end),
    CHECK_CASE(header_sent_again_is_written_once),
    CHECK_CASE(keep_and_numbering),
    CHECK_CASE(mode_and_empty_file),
    CHECK_CASE(open_refusals),
    CHECK_CASE(registered_once),
};

CHECK_MAIN(cases)
