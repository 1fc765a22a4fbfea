/* Secured ensembles through the C API: TLS with x509 identities, SASL DIGEST-MD5, ACL
 * administration, and every hostile case of issue 30 with its status and words.
 *
 * usage: test_secure PLAIN_HOSTS MAIN EXPIRED WRONGNAME
 *   PLAIN_HOSTS a plain server (for ACL administration without security)
 *   MAIN        the output of `zk-harness start --tls need --x509 --sasl-user alice:secret
 *               --sasl-required` (first line the plaintext connect string, then KEY=VALUE lines)
 *   EXPIRED     the same of `zk-harness start --tls none --server-cert expired`
 *   WRONGNAME   the same of `zk-harness start --tls none --server-cert wrong-name`
 * scripts/test-c starts the servers and passes the files. */
#include "testutil.h"

typedef struct secured {
    char plain[128];
    char vals[48][2][512];
    int n;
} secured;

static secured main_srv, expired_srv, wrong_srv;

static void load(secured *s, const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "test_secure: cannot read %s\n", file);
        exit(2);
    }
    char line[1100];
    s->n = 0;
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        snprintf(s->plain, sizeof s->plain, "%.127s", line);
    }
    while (fgets(line, sizeof line, f) && s->n < 48) {
        line[strcspn(line, "\n")] = 0;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        snprintf(s->vals[s->n][0], 512, "%.511s", line);
        snprintf(s->vals[s->n][1], 512, "%.511s", eq + 1);
        s->n++;
    }
    fclose(f);
}

static const char *val(const secured *s, const char *key) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->vals[i][0], key) == 0) return s->vals[i][1];
    fprintf(stderr, "test_secure: no %s in the harness's output\n", key);
    exit(2);
}

/* Options for `s`'s TLS port with client identity `who` (NULL: no client certificate) and, if
 * `user` is set, SASL. */
static zkr_client_options tls_opts(const secured *s, const char *who, const char *user, const char *password) {
    static char cert[128], key[128];
    zkr_client_options o;
    zkr_client_options_init(&o);
    o.connection_timeout_ms = 5000;
    o.session_timeout_ms = 10000;
    o.tls = true;
    o.tls_ca = val(s, "ca");
    if (who) {
        snprintf(cert, sizeof cert, "%s_cert", who);
        snprintf(key, sizeof key, "%s_key", who);
        o.tls_cert = val(s, cert);
        o.tls_key = val(s, key);
    }
    o.sasl_username = user;
    o.sasl_password = password;
    return o;
}

/* The connect must fail with `expected` and a message holding `words`. */
#define CHECK_REFUSED(hosts, opts, expected, words)                                                 \
    do {                                                                                            \
        zkr_client *c_ = NULL;                                                                      \
        zkr_status s_ = zkr_client_connect((hosts), &(opts), &c_);                                  \
        const char *m_ = zkr_last_error_message();                                                  \
        if (s_ == ZKR_OK) zkr_client_free(c_);                                                      \
        CHECK_MSG(s_ == (expected), "connect returned %s, expected %s: %s", zkr_status_name(s_),    \
                  zkr_status_name(expected), m_ ? m_ : "");                                         \
        CHECK_MSG(m_ && strstr(m_, (words)), "message does not say %s: %s", (words), m_ ? m_ : ""); \
    } while (0)

static void test_mutual_tls_and_sasl_identities_and_no_auth_for_another_cert(void) {
    const char *secure = val(&main_srv, "secure_connect_string");
    zkr_client_options o = tls_opts(&main_srv, "client", "alice", "secret");
    zkr_acl creator = {ZKR_PERM_ALL, "auth", ""};
    o.acl = &creator;
    o.acl_len = 1;
    zkr_client *c = NULL;
    CHECK_OK(zkr_client_connect(secure, &o, &c));
    char path[96];
    zt_path(path, sizeof path, "mine");
    CHECK_OK(zkr_client_create(c, path, (const uint8_t *)"x", 1, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    zkr_acl_list *acl = NULL;
    zkr_stat st;
    CHECK_OK(zkr_client_get_acl(c, path, &acl, &st));
    bool x509 = false, sasl = false;
    for (size_t i = 0; i < acl->len; i++) {
        if (strcmp(acl->entries[i].scheme, "x509") == 0 && strcmp(acl->entries[i].id, val(&main_srv, "client_x509_id")) == 0)
            x509 = true;
        if (strcmp(acl->entries[i].scheme, "sasl") == 0 && strcmp(acl->entries[i].id, "alice") == 0) sasl = true;
    }
    zkr_acl_list_free(acl);
    CHECK_MSG(x509 && sasl, "the node's ACL lacks the x509 or the sasl identity");
    zkr_mutex *m = NULL;
    char lock[96];
    zt_path(lock, sizeof lock, "lock");
    bool ok = false;
    CHECK_OK(zkr_mutex_new(c, lock, &m));
    CHECK_OK(zkr_mutex_acquire(m, 5000, &ok));
    CHECK(ok);
    CHECK_OK(zkr_mutex_release(m));
    zkr_mutex_free(m);

    /* Another certificate, another SASL identity: no access. */
    zkr_client_options other = tls_opts(&main_srv, "other_client", NULL, NULL);
    CHECK_REFUSED(secure, other, ZKR_AUTH_FAILED, "requires authentication");
    zkr_client_free(c);
}

static void test_server_certificates_we_refuse(void) {
    zkr_client_options o = tls_opts(&main_srv, "client", "alice", "secret");
    o.tls_ca = val(&main_srv, "wrong_ca");
    o.connection_timeout_ms = 60000;
    double t0 = zt_now_ms();
    CHECK_REFUSED(val(&main_srv, "secure_connect_string"), o, ZKR_AUTH_FAILED, "unknown issuer");
    CHECK_MSG(zt_now_ms() - t0 < 30000, "waited for the connection timeout");
    zkr_client_options e = tls_opts(&expired_srv, NULL, NULL, NULL);
    CHECK_REFUSED(val(&expired_srv, "secure_connect_string"), e, ZKR_AUTH_FAILED, "expired");
    zkr_client_options w = tls_opts(&wrong_srv, NULL, NULL, NULL);
    CHECK_REFUSED(val(&wrong_srv, "secure_connect_string"), w, ZKR_AUTH_FAILED, "does not name the host");
    w.tls_skip_hostname_verification = true;
    zkr_client *c = NULL;
    CHECK_OK(zkr_client_connect(val(&wrong_srv, "secure_connect_string"), &w, &c));
    zkr_client_free(c);
}

static void test_client_certificates_the_server_refuses(void) {
    const char *secure = val(&main_srv, "secure_connect_string");
    zkr_client_options none = tls_opts(&main_srv, NULL, "alice", "secret");
    CHECK_REFUSED(secure, none, ZKR_AUTH_FAILED, "client certificate");
    zkr_client_options expired = tls_opts(&main_srv, "expired_client", "alice", "secret");
    CHECK_REFUSED(secure, expired, ZKR_AUTH_FAILED, "the server rejected the client certificate");
    zkr_client_options wrong = tls_opts(&main_srv, "wrong_ca_client", "alice", "secret");
    CHECK_REFUSED(secure, wrong, ZKR_AUTH_FAILED, "the server rejected the client certificate");
}

static void test_the_wrong_protocol_on_a_port_is_named(void) {
    zkr_client_options plain;
    zkr_client_options_init(&plain);
    /* Long enough for a connection attempt on a busy machine: the diagnosis needs one. */
    plain.connection_timeout_ms = 4000;
    CHECK_REFUSED(val(&main_srv, "secure_connect_string"), plain, ZKR_TIMEOUT, "speaks TLS");
    zkr_client_options tls = tls_opts(&main_srv, "client", "alice", "secret");
    tls.connection_timeout_ms = 4000;
    CHECK_REFUSED(main_srv.plain, tls, ZKR_TIMEOUT, "speaks plaintext ZooKeeper, not TLS");
}

static void test_sasl_refusals_are_auth_failed_at_once(void) {
    const char *secure = val(&main_srv, "secure_connect_string");
    double t0 = zt_now_ms();
    zkr_client_options wrong = tls_opts(&main_srv, "client", "alice", "wrong");
    wrong.connection_timeout_ms = 60000;
    CHECK_REFUSED(secure, wrong, ZKR_AUTH_FAILED, "as \"alice\"");
    zkr_client_options unknown = tls_opts(&main_srv, "client", "mallory", "not-alices");
    unknown.connection_timeout_ms = 60000;
    CHECK_REFUSED(secure, unknown, ZKR_AUTH_FAILED, "as \"mallory\"");
    zkr_client_options none = tls_opts(&main_srv, "client", NULL, NULL);
    none.connection_timeout_ms = 60000;
    CHECK_REFUSED(secure, none, ZKR_AUTH_FAILED, "requires authentication");
    CHECK_MSG(zt_now_ms() - t0 < 30000, "a refusal was retried");
}

static void test_bad_tls_inputs_before_any_connection(void) {
    /* Port 1: nothing listens; a connection attempt would end in ZKR_TIMEOUT, not this. */
    zkr_client_options o = tls_opts(&main_srv, "client", NULL, NULL);
    o.connection_timeout_ms = 30000;
    o.tls_ca = "/nonexistent/ca.pem";
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "cannot read the TLS CA file");
    o = tls_opts(&main_srv, "client", NULL, NULL);
    o.tls_ca = "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n";
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "TLS CA");
    o = tls_opts(&main_srv, "client", NULL, NULL);
    o.tls_key = val(&main_srv, "other_client_key");
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "does the key belong");
    o = tls_opts(&main_srv, "client", NULL, NULL);
    o.tls_key = val(&main_srv, "encrypted_client_key");
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "is encrypted");
    o = tls_opts(&main_srv, NULL, NULL, NULL);
    o.tls = false;
    o.tls_ca = val(&main_srv, "ca");
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "opts.tls");
    /* The TLS flags without opts.tls were ignored: the connection went plaintext unsaid. */
    o = tls_opts(&main_srv, NULL, NULL, NULL);
    o.tls = false;
    o.tls_ca = NULL;
    o.tls_skip_hostname_verification = true;
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "opts.tls is false");
    o.tls_skip_hostname_verification = false;
    o.tls_marked_hosts_only = true;
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "opts.tls is false");
    o = tls_opts(&main_srv, NULL, "alice", NULL);
    CHECK_REFUSED("127.0.0.1:1", o, ZKR_INVALID_ARGUMENT, "sasl_password");
}

static void test_acl_administration(void) {
    zkr_client *c = NULL;
    zkr_client_options o;
    zkr_client_options_init(&o);
    zkr_acl read_all = {ZKR_PERM_READ, "world", "anyone"};
    zkr_acl everything = {ZKR_PERM_ALL, "world", "anyone"};
    char secret[96], rule_path[96];
    zt_path(rule_path, sizeof rule_path, "ruled");
    zkr_acl_rule rule = {rule_path, &read_all, 1};
    o.acl_rules = &rule;
    o.acl_rules_len = 1;
    CHECK_OK(zkr_client_connect(zt_connect, &o, &c));
    /* A path rule of the provider. */
    CHECK_OK(zkr_client_create(c, rule_path, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    zkr_acl_list *acl = NULL;
    CHECK_OK(zkr_client_get_acl(c, rule_path, &acl, NULL));
    CHECK(acl->len == 1 && acl->entries[0].perms == ZKR_PERM_READ);
    zkr_acl_list_free(acl);
    /* A node's own ACL, then set_acl by version. */
    zt_path(secret, sizeof secret, "own");
    zkr_acl read_admin = {ZKR_PERM_READ | ZKR_PERM_ADMIN, "world", "anyone"};
    CHECK_OK(zkr_client_create_with_acl(c, secret, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, &read_admin, 1, NULL));
    zkr_stat st;
    CHECK_OK(zkr_client_get_acl(c, secret, &acl, &st));
    CHECK(acl->len == 1 && strcmp(acl->entries[0].scheme, "world") == 0 && st.aversion == 0);
    CHECK(acl->entries[0].perms == (ZKR_PERM_READ | ZKR_PERM_ADMIN));
    zkr_acl_list_free(acl);
    CHECK_STATUS(zkr_client_set_data(c, secret, (const uint8_t *)"y", 1, -1, NULL), ZKR_NO_AUTH, "zkr_client_set_data");
    CHECK_STATUS(zkr_client_set_acl(c, secret, &everything, 1, 5, NULL), ZKR_BAD_VERSION, "zkr_client_set_acl");
    CHECK_OK(zkr_client_set_acl(c, secret, &everything, 1, 0, &st));
    CHECK(st.aversion == 1);
    CHECK_OK(zkr_client_set_data(c, secret, (const uint8_t *)"y", 1, -1, NULL));
    CHECK_STATUS(zkr_client_set_acl(c, secret, NULL, 0, -1, NULL), ZKR_INVALID_ARGUMENT, "zkr_client_set_acl");
    CHECK_STATUS(zkr_client_get_acl(c, secret, NULL, NULL), ZKR_INVALID_ARGUMENT, "zkr_client_get_acl");
    /* A transaction create's own ACL. */
    char tx[96];
    zt_path(tx, sizeof tx, "tx");
    zkr_transaction *t = NULL;
    CHECK_OK(zkr_client_create(c, tx, NULL, 0, ZKR_PERSISTENT, ZKR_CREATE_PARENTS, NULL));
    char child[128];
    snprintf(child, sizeof child, "%s/child", tx);
    CHECK_OK(zkr_transaction_new(c, &t));
    CHECK_OK(zkr_transaction_create_with_acl(t, child, NULL, 0, ZKR_PERSISTENT, &read_all, 1));
    zkr_op_result_list *results = NULL;
    CHECK_OK(zkr_transaction_commit(t, &results));
    zkr_op_result_list_free(results);
    zkr_transaction_free(t);
    CHECK_OK(zkr_client_get_acl(c, child, &acl, NULL));
    CHECK(acl->len == 1 && acl->entries[0].perms == ZKR_PERM_READ);
    zkr_acl_list_free(acl);
    zkr_acl_list_free(NULL);
    zkr_client_free(c);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s PLAIN_HOSTS MAIN EXPIRED WRONGNAME (scripts/test-c starts the servers)\n", argv[0]);
        return 2;
    }
    zt_begin(argc, argv);
    load(&main_srv, argv[2]);
    load(&expired_srv, argv[3]);
    load(&wrong_srv, argv[4]);
    RUN(test_acl_administration);
    RUN(test_mutual_tls_and_sasl_identities_and_no_auth_for_another_cert);
    RUN(test_server_certificates_we_refuse);
    RUN(test_client_certificates_the_server_refuses);
    RUN(test_the_wrong_protocol_on_a_port_is_named);
    RUN(test_sasl_refusals_are_auth_failed_at_once);
    RUN(test_bad_tls_inputs_before_any_connection);
    return zt_end("test_secure");
}
