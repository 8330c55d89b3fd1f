/* The C API used from C: this file is compiled as C (C11, -Wall -Wextra -Werror) into
 * test_bpf; c_api_test.cc's BpfCApiFromC test calls the entry below and reports what it
 * wrote. Every API function is called once from C. */
#include <pktpath/bpf.h>

#include <stdio.h>
#include <string.h>

/* Defined here, called from C++ (declared there extern "C"). */
int pktpath_c_api_c_test(char *msg, size_t msg_size);

#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      if (failures++ == 0) snprintf(msg, msg_size, "%s:%d: %s", __FILE__, __LINE__, #cond); \
    }                                                                                         \
  } while (0)

/* A 60-byte Ethernet + IPv4 + UDP frame from 192.168.2.7 to 10.0.0.1, port 53. */
static void make_frame(unsigned char *f) {
  memset(f, 0, 60);
  f[12] = 0x08; /* ethertype IPv4 */
  f[14] = 0x45; /* version 4, IHL 5 */
  f[23] = 17;   /* UDP */
  f[26] = 192, f[27] = 168, f[28] = 2, f[29] = 7;
  f[30] = 10, f[33] = 1;
  f[36] = 0, f[37] = 53; /* dport 53 */
}

int pktpath_c_api_c_test(char *msg, size_t msg_size) {
  int failures = 0;
  msg[0] = '\0';
  unsigned char frame[60];
  make_frame(frame);
  char err[PKTPATH_BPF_ERRBUF_SIZE];

  CHECK(pktpath_bpf_version() == PKTPATH_BPF_VERSION);
  CHECK(pktpath_bpf_version() >> 16 == PKTPATH_BPF_VERSION_MAJOR);

  /* ldh [12]; jeq #0x800, accept 0xffff, else 0 */
  struct pktpath_bpf_insn ip[] = {{0x28, 0, 0, 12}, {0x15, 0, 1, 0x800}, {0x06, 0, 0, 0xffff}, {0x06, 0, 0, 0}};
  const int engines[] = {PKTPATH_BPF_ENGINE_SWITCH, PKTPATH_BPF_ENGINE_THREADED, PKTPATH_BPF_ENGINE_JIT,
                         PKTPATH_BPF_ENGINE_DEFAULT};
  const int modes[] = {PKTPATH_BPF_KERNEL, PKTPATH_BPF_USERLAND};
  for (size_t m = 0; m < 2; ++m) {
    for (size_t e = 0; e < 4; ++e) {
      pktpath_bpf *f = pktpath_bpf_load(ip, 4, modes[m], engines[e], err, sizeof err);
      CHECK(f != NULL);
      if (f == NULL) continue;
      CHECK(pktpath_bpf_run(f, frame, 60, 60, NULL) == 0xffff);
      CHECK(pktpath_bpf_run(f, frame, 60, 12, NULL) == 0); /* the load is past buflen */
      CHECK(pktpath_bpf_mode(f) == modes[m]);
      if (engines[e] != PKTPATH_BPF_ENGINE_DEFAULT && engines[e] != PKTPATH_BPF_ENGINE_JIT)
        CHECK(pktpath_bpf_engine(f) == engines[e]);
      CHECK(strcmp(pktpath_bpf_engine_name(pktpath_bpf_engine(f)), "?") != 0);
      CHECK(pktpath_bpf_jit_fallback_reason(f) != NULL);
      size_t n = 0;
      const struct pktpath_bpf_insn *insns = pktpath_bpf_insns(f, &n);
      CHECK(n == 4 && insns != NULL && memcmp(insns, ip, sizeof ip) == 0);
      pktpath_bpf_free(f);
    }
  }

  /* An expression, Ethernet, full snapshot. */
  pktpath_bpf *f = pktpath_bpf_compile("udp dst port 53 and src net 192.168.2.0/24", 1, 262144, 1,
                                       PKTPATH_BPF_NETMASK_UNKNOWN, PKTPATH_BPF_USERLAND, PKTPATH_BPF_ENGINE_JIT,
                                       err, sizeof err);
  CHECK(f != NULL);
  if (f != NULL) {
    CHECK(pktpath_bpf_run(f, frame, 60, 60, NULL) == 262144);
    frame[27] = 1; /* 192.1.2.7: outside the net */
    CHECK(pktpath_bpf_run(f, frame, 60, 60, NULL) == 0);
    frame[27] = 168;
    pktpath_bpf_free(f);
  }

  /* Metadata: ld #mark (SKF_AD_OFF + SKF_AD_MARK = 0xfffff000 + 20); ret a. */
  struct pktpath_bpf_insn mark[] = {{0x20, 0, 0, 0xfffff014u}, {0x16, 0, 0, 0}};
  f = pktpath_bpf_load(mark, 2, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_DEFAULT, err, sizeof err);
  CHECK(f != NULL);
  if (f != NULL) {
    struct pktpath_bpf_meta meta;
    pktpath_bpf_meta_init(&meta);
    CHECK(meta.hatype == 1 && meta.net_off == 14 && meta.mark == 0 && meta.has_dev == 0);
    meta.mark = 0x1234;
    CHECK(pktpath_bpf_run(f, frame, 60, 60, &meta) == 0x1234);
    CHECK(pktpath_bpf_run(f, frame, 60, 60, NULL) == 0);
    pktpath_bpf_free(f);
  }

  /* Errors: a rejected program, a bad expression, a bad engine, a short buffer. */
  struct pktpath_bpf_insn no_ret[] = {{0x28, 0, 0, 12}};
  err[0] = '\0';
  CHECK(pktpath_bpf_load(no_ret, 1, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, err, sizeof err) == NULL);
  CHECK(err[0] != '\0');
  err[0] = '\0';
  CHECK(pktpath_bpf_compile("tcp port", 1, 262144, 1, PKTPATH_BPF_NETMASK_UNKNOWN, PKTPATH_BPF_KERNEL,
                            PKTPATH_BPF_ENGINE_SWITCH, err, sizeof err) == NULL);
  CHECK(err[0] != '\0');
  CHECK(pktpath_bpf_load(ip, 4, PKTPATH_BPF_KERNEL, 42, NULL, 0) == NULL);
  char tiny[4] = "xyz";
  CHECK(pktpath_bpf_load(no_ret, 1, PKTPATH_BPF_KERNEL, PKTPATH_BPF_ENGINE_SWITCH, tiny, sizeof tiny) == NULL);
  CHECK(strlen(tiny) == 3);
  pktpath_bpf_free(NULL);

  /* bpf_filter's form. */
  CHECK(pktpath_bpf_filter(ip, frame, 60, 60) == 0xffff);
  CHECK(pktpath_bpf_filter(NULL, frame, 60, 60) == 0xffffffffu);
  return failures;
}
