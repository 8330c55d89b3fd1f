/* pktpath classic BPF: the C API of libpktpath_bpf.
 *
 * The classic BPF machine of pktpath (Linux's semantics, libpcap's expressions) as a
 * library callable from C and C++. A program is loaded once into an opaque handle --
 * from instructions (struct sock_filter / struct bpf_insn layout) or from a pcap-filter
 * expression compiled by libpcap -- checked under one of two acceptance modes, prepared
 * for an engine, then run on packets:
 *
 *     char err[PKTPATH_BPF_ERRBUF_SIZE];
 *     pktpath_bpf *f = pktpath_bpf_compile("tcp port 80", 1, 262144, 1,
 *                                          PKTPATH_BPF_NETMASK_UNKNOWN, PKTPATH_BPF_USERLAND,
 *                                          PKTPATH_BPF_ENGINE_DEFAULT, err, sizeof err);
 *     if (!f) { fprintf(stderr, "%s\n", err); return 1; }
 *     unsigned int r = pktpath_bpf_run(f, pkt, wirelen, caplen, NULL);
 *     pktpath_bpf_free(f);
 *
 * Errors: the functions that can fail (load and compile) return NULL and write a
 * NUL-terminated message into the caller's buffer `errbuf` of `errbuf_size` bytes (cut to
 * fit; PKTPATH_BPF_ERRBUF_SIZE always holds the whole message). errbuf may be NULL.
 * A handle has no error state: once loaded, nothing on it fails.
 *
 * Thread safety: a loaded handle is immutable; any number of threads may call
 * pktpath_bpf_run and the query functions on it at once. pktpath_bpf_free must not run
 * concurrently with other calls on the same handle. Loading and compiling may be called
 * from many threads (expression compiles are serialised inside the library, because
 * libpcap's compiler is not reentrant in every release; a process that also calls
 * pcap_compile itself should not do so while a pktpath_bpf_compile runs).
 * pktpath_bpf_filter is reentrant.
 *
 * Versioning: PKTPATH_BPF_VERSION_MAJOR changes when a function's signature, a struct's
 * layout or a constant's value changes (the shared library's SONAME is
 * libpktpath_bpf.so.MAJOR); MINOR when functions or constants are added.
 * pktpath_bpf_version() reports the library actually loaded.
 */
#ifndef PKTPATH_BPF_H
#define PKTPATH_BPF_H

#include <stddef.h>
#include <stdint.h>

#define PKTPATH_BPF_VERSION_MAJOR 1
#define PKTPATH_BPF_VERSION_MINOR 0
/* MAJOR << 16 | MINOR: the value pktpath_bpf_version() returns for this header. */
#define PKTPATH_BPF_VERSION ((PKTPATH_BPF_VERSION_MAJOR << 16) | PKTPATH_BPF_VERSION_MINOR)

#if defined(PKTPATH_BPF_BUILDING) && defined(__GNUC__)
#define PKTPATH_BPF_API __attribute__((visibility("default")))
#else
#define PKTPATH_BPF_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One instruction: the layout of Linux's struct sock_filter and libpcap's struct bpf_insn
 * (8 bytes: code, jt, jf, k), so arrays of either may be passed by a cast. */
struct pktpath_bpf_insn {
  uint16_t code;
  uint8_t jt;
  uint8_t jf;
  uint32_t k;
};

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(struct pktpath_bpf_insn) == 8, "pktpath_bpf_insn is struct sock_filter");
static_assert(offsetof(struct pktpath_bpf_insn, jt) == 2 && offsetof(struct pktpath_bpf_insn, jf) == 3 &&
                  offsetof(struct pktpath_bpf_insn, k) == 4,
              "pktpath_bpf_insn is struct sock_filter");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct pktpath_bpf_insn) == 8, "pktpath_bpf_insn is struct sock_filter");
_Static_assert(offsetof(struct pktpath_bpf_insn, jt) == 2 && offsetof(struct pktpath_bpf_insn, jf) == 3 &&
                   offsetof(struct pktpath_bpf_insn, k) == 4,
               "pktpath_bpf_insn is struct sock_filter");
#endif

/* Acceptance modes: which programs load. */
enum pktpath_bpf_mode {
  /* Linux's checker (bpf_check_classic + check_load_and_stores): forward jumps only,
   * a RET at the end, scratch memory written before it is read, the kernel's opcodes
   * and ancillary loads (SKF_AD_*). */
  PKTPATH_BPF_KERNEL = 0,
  /* libpcap's rules (pcap_validate_filter, what libpcap applies to offline files and
   * bpf_filter runs): an unconditional jump may go backward (the loops of libpcap's
   * `protochain`), scratch memory may be read before it is written (it reads 0).
   * Such programs run bounded: a run that takes too many backward jumps ends returning
   * 0, at the same jump on every engine, the JIT included. Programs that also pass
   * the kernel's rules run as in PKTPATH_BPF_KERNEL. */
  PKTPATH_BPF_USERLAND = 1
};

/* Engines. All give the same results; the JIT is the fastest. */
enum pktpath_bpf_engine {
  PKTPATH_BPF_ENGINE_DEFAULT = 0, /* the JIT, or what PKTPATH_BPF_ENGINE=switch|threaded|jit
                                     in the environment names (read once per process) */
  PKTPATH_BPF_ENGINE_SWITCH = 1,  /* the reference interpreter */
  PKTPATH_BPF_ENGINE_THREADED = 2, /* computed-goto interpreter over a decoded form */
  PKTPATH_BPF_ENGINE_JIT = 3      /* x86-64 code; a program it does not take runs on the
                                     threaded engine (pktpath_bpf_engine says which) */
};

/* Room for any error message the library writes. */
#define PKTPATH_BPF_ERRBUF_SIZE 256
/* pcap_compile's netmask when it is not known (PCAP_NETMASK_UNKNOWN). */
#define PKTPATH_BPF_NETMASK_UNKNOWN 0xffffffffu

/* What the ancillary loads (LD ABS of SKF_AD_OFF + SKF_AD_*) and the negative-offset loads
 * (SKF_NET_OFF, SKF_LL_OFF) read: the skb fields of Linux. Fill it with
 * pktpath_bpf_meta_init, then set what the packet has. */
struct pktpath_bpf_meta {
  uint32_t mark;          /* SKF_AD_MARK */
  uint32_t hash;          /* SKF_AD_RXHASH */
  int32_t ifindex;        /* SKF_AD_IFINDEX (needs has_dev) */
  uint32_t cpu;           /* SKF_AD_CPU */
  uint16_t protocol;      /* SKF_AD_PROTOCOL: skb->protocol, network byte order */
  uint16_t queue_mapping; /* SKF_AD_QUEUE */
  uint16_t vlan_tci;      /* SKF_AD_VLAN_TAG */
  uint16_t vlan_proto;    /* SKF_AD_VLAN_TPID, network byte order */
  uint16_t hatype;        /* SKF_AD_HATYPE: ARPHRD_* of the device (needs has_dev) */
  uint8_t pkt_type;       /* SKF_AD_PKTTYPE: PACKET_HOST, PACKET_OUTGOING, ... */
  uint8_t vlan_present;   /* SKF_AD_VLAN_TAG_PRESENT (0 or 1) */
  uint8_t has_dev;        /* 0: IFINDEX and HATYPE loads end the program returning A,
                             as the kernel does for a packet without a device */
  uint8_t reserved[3];    /* zero */
  uint32_t mac_off;       /* mac header offset in the buffer (SKF_LL_OFF base) */
  uint32_t net_off;       /* network header offset in the buffer (SKF_NET_OFF base) */
};

/* Defaults: every field 0 except hatype 1 (ARPHRD_ETHER) and net_off 14 (after an
 * Ethernet header). pktpath_bpf_run with meta NULL uses these, and is the faster call:
 * the packet reaches the engine in registers, with no metadata to copy. */
PKTPATH_BPF_API void pktpath_bpf_meta_init(struct pktpath_bpf_meta *meta);

/* The loaded library's version: MAJOR << 16 | MINOR (compare with PKTPATH_BPF_VERSION). */
PKTPATH_BPF_API unsigned int pktpath_bpf_version(void);

/* A loaded program. */
typedef struct pktpath_bpf pktpath_bpf;

/* Checks n instructions under `mode` (enum pktpath_bpf_mode) and prepares them for
 * `engine` (enum pktpath_bpf_engine). The instructions are copied. NULL on rejection, the
 * checker's reason in errbuf ("insn 3: ..."); also NULL for an unknown mode or engine. */
PKTPATH_BPF_API pktpath_bpf *pktpath_bpf_load(const struct pktpath_bpf_insn *insns, size_t n, int mode,
                                              int engine, char *errbuf, size_t errbuf_size);

/* Compiles a pcap-filter expression with libpcap (pcap_compile on
 * pcap_open_dead(linktype, snaplen); linktype is a DLT_* value, optimize 0 or 1, netmask
 * as pcap_compile's, PKTPATH_BPF_NETMASK_UNKNOWN when not known), then loads it as
 * pktpath_bpf_load. NULL on a compile error (libpcap's message in errbuf) or rejection. */
PKTPATH_BPF_API pktpath_bpf *pktpath_bpf_compile(const char *expr, int linktype, int snaplen, int optimize,
                                                 uint32_t netmask, int mode, int engine, char *errbuf,
                                                 size_t errbuf_size);

/* Runs the program on a packet of buflen bytes at p that was wirelen bytes long on the
 * wire (as bpf_filter: loads are bounded by buflen, LD LEN returns wirelen). meta may be
 * NULL (the defaults of pktpath_bpf_meta_init). Returns the program's return value: for
 * a filter, the number of bytes to keep, 0 to drop. */
PKTPATH_BPF_API uint32_t pktpath_bpf_run(const pktpath_bpf *prog, const unsigned char *p, unsigned int wirelen,
                                         unsigned int buflen, const struct pktpath_bpf_meta *meta);

/* The engine that runs the program (enum pktpath_bpf_engine, never _DEFAULT):
 * PKTPATH_BPF_ENGINE_THREADED when the JIT was asked for and did not take the program. */
PKTPATH_BPF_API int pktpath_bpf_engine(const pktpath_bpf *prog);
/* Why the JIT did not take the program; "" when it did or was not asked for. */
PKTPATH_BPF_API const char *pktpath_bpf_jit_fallback_reason(const pktpath_bpf *prog);
/* "switch", "threaded" or "jit"; "?" for a value that is none of the engines. */
PKTPATH_BPF_API const char *pktpath_bpf_engine_name(int engine);
/* The acceptance mode the program was loaded under. */
PKTPATH_BPF_API int pktpath_bpf_mode(const pktpath_bpf *prog);
/* The program's instructions (*n set to their number); valid until pktpath_bpf_free. */
PKTPATH_BPF_API const struct pktpath_bpf_insn *pktpath_bpf_insns(const pktpath_bpf *prog, size_t *n);

/* Frees a handle; NULL is ignored. */
PKTPATH_BPF_API void pktpath_bpf_free(pktpath_bpf *prog);

/* libpcap's bpf_filter, with the same arguments and meaning: runs pc on the buflen bytes
 * at p of a packet wirelen bytes long and returns the return value; pc NULL accepts
 * everything (returns 0xffffffff). As bpf_filter, it is given no program length and
 * checks nothing: pc must be a program libpcap accepts (what pcap_compile produces;
 * jump targets are trusted). It interprets the instructions directly under the userland
 * rules, backward jumps bounded. A libpcap user switches by renaming the call. */
PKTPATH_BPF_API unsigned int pktpath_bpf_filter(const struct pktpath_bpf_insn *pc, const unsigned char *p,
                                                unsigned int wirelen, unsigned int buflen);

#ifdef __cplusplus
}
#endif

#endif /* PKTPATH_BPF_H */
