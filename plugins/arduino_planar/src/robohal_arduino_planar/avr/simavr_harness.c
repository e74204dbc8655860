/*
 * simavr_harness: runs the planar-arm firmware ELF in simavr as a stand-in for an Arduino Uno on a
 * serial port. A test tool only (simavr is GPL-3); nothing here is linked into the Python package.
 *
 *   simavr_harness ELF [--boot-ms N] [--fast 0|1] [--servo-speed RAD_PER_S] [--ideal 0|1] [--pulses 0|1]
 *                      [--scheme NAME]
 *
 * (python -m robohal_arduino_planar.simulator builds it and runs it with these options.) A
 * boolean option takes 1/0, true/false or yes/no.
 *
 * stdout, line by line:
 *   READY <scheme>://<pty>               first: the ready line of every robohal simulator, naming the
 *                                        pty slave (open it with pyserial at 115200); the scheme is
 *                                        --scheme's, the backend it was started for (default
 *                                        arduino-planar; arduino-arm drives the same firmware's channels)
 *   RESET <sim_us> <open|stdin>          the MCU left reset and starts the firmware
 *   PULSE <sim_us> <pin> <width_us>      with --pulses 1: one servo pulse on D9/D10 (the arm) or D6
 *                                        (the tool), or on a channel's pin (any of D2..D13, A0..A5 as
 *                                        14..19) (rising-edge time, width to 1/16 us)
 *   HORN <sim_us> <pin> <position_us>    after each PULSE: that servo's horn as the pulse ends
 *                                        (falling-edge time), as the pulse width whose target it is
 *   STATS {json}                         the answer to the control line STATS: the horns now, and
 *                                        the watched pins that are high (high_pins)
 * stdin, line by line (fault injection for tests):
 *   RESET               hold the MCU in reset for the boot delay, then restart it
 *   INJECT_RX <hex>     bytes reach the MCU's receiver as if the host had sent them
 *   INJECT_TX <hex>     bytes reach the host as if the MCU had sent them (line noise)
 *   DROP_RX <n>         the next n bytes from the host are lost on the wire
 *   STATS               answer with one STATS line
 *   QUIT
 * Exits on QUIT, the end of a pipe on stdin (its launcher's), SIGTERM/SIGINT, or a crashed MCU.
 * Started with a terminal, /dev/null or no stdin at all, only the signals (or QUIT) end it.
 *
 * The UART is bridged to the pty here rather than with simavr's uart_pty part: that part's stop
 * hangs, stalls after 512 queued bytes, and publishes a global /tmp symlink. Doing it in the
 * simulation loop keeps everything in one thread.
 *
 * Reset-on-open: a real Uno resets when the host opens the port (DTR). The harness watches the
 * slave device with inotify, so an open is seen even if the host closes and reopens at once. The MCU
 * is held until the first open; each 0 -> 1 transition of host opens holds it again, discards what
 * either side had queued, and restarts the firmware after --boot-ms (default 300) of wall time.
 *
 * The servos: a hobby servo has no feedback to the MCU, and its horn is not instant. Each servo
 * here turns its horn toward the width of the last pulse it measured, at --servo-speed rad/s
 * (default the TowerPro SG90 datasheet's "0.1 s/60 degree" at 4.8 V, no load), with the SG90's
 * pulse scale (-90 deg ~1 ms, 0 at 1.5 ms, +90 deg ~2 ms: 1000 us per pi rad), driving for one
 * 20 ms frame after each pulse (an analog servo without pulses goes limp). --ideal 1 makes each
 * horn jump to its pulse at once. robohal_arduino_planar/servo.py is the same model in Python,
 * for the emulator; keep the two alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "sim_avr.h"
#include "sim_elf.h"
#include "sim_io.h"
#include "sim_irq.h"
#include "avr_ioport.h"
#include "avr_uart.h"

/* The Uno's 16 MHz crystal (Arduino Uno board; the core's boards.txt: f_cpu=16000000L). */
#define F_CPU_HZ 16000000ULL
/* Our choice: 125 us of simulated time between I/O checks (about a byte time at 115200 baud, and
 * 1/160 of the 20 ms servo frame), so host bytes and pty output never wait noticeably. */
#define SLICE_CYCLES 2000ULL
/* One 8N1 character (10 bit times, PROTOCOL.md) at 115200 baud: 16e6 * 10 / 115200 = 1388.9. */
#define BYTE_CYCLES 1389ULL
/* Our choice: behind real time by more than this (a busy host), re-anchor rather than race to
 * catch up, so the firmware never sees a burst of compressed time. */
#define MAX_LAG_NS 50000000LL
/* Our choice: with nothing to simulate (waiting for the first open), look at stdin this often. */
#define IDLE_WAIT_NS 100000000LL
/* Our choice: the reset hold after an open; a real Uno's bootloader takes 1-2 s (research notes),
 * tests want less, and the backend's boot budget (2 s) covers the real one. */
#define DEFAULT_BOOT_MS 300
#define MAX_BOOT_MS 60000                 /* our choice: a bound for a mistyped argument */

/* The servo model (see the header comment and servo.py). */
#define SG90_SPEED_RAD_S (M_PI / 3.0 / 0.1)    /* SG90 datasheet: 0.1 s/60 degree at 4.8 V */
#define SERVO_US_PER_RAD (1000.0 / M_PI)       /* SG90 datasheet: 1 ms..2 ms = -90..+90 deg */
#define SERVO_NEUTRAL_US 1500.0                /* SG90: 1.5 ms = middle; where a horn starts: our choice */
#define DRIVE_AFTER_PULSE_CYCLES (F_CPU_HZ / 50) /* 20 ms, one frame: our choice (servo.py) */

enum mcu_state { MCU_WAIT_OPEN, MCU_BOOTING, MCU_RUNNING };

static avr_t *avr;
static enum mcu_state state = MCU_WAIT_OPEN;
static volatile sig_atomic_t stop_requested = 0;

static uint64_t cycle_base = 0;          /* simulated cycles before the last reset */
static uint64_t last_cycle = 0;

/* bytes host -> MCU waiting for their slot on the wire, and MCU -> host waiting for the pty; the
 * sizes are our choice (far above anything a one-command-in-flight host leaves queued) */
static uint8_t in_buf[4096];
static size_t in_len = 0, in_pos = 0;
static uint8_t out_buf[65536];
static size_t out_len = 0;
static int uart_xon = 1;
static uint64_t next_feed_cycle = 0;

static unsigned long drop_rx = 0;       /* host bytes still to lose (DROP_RX) */

/* Every pin a servo can be on: the planar arm's D9 (OC1A), D10 (OC1B) and D6 first (STATS reports
 * these three in this order), then the rest of D2..D13 and A0..A5 (14..19), a channel's choice. */
#define SERVO_COUNT 18
#define PLANAR_SERVOS 3
static int pin_high[SERVO_COUNT];
static uint64_t pin_rise[SERVO_COUNT];
static const int pin_number[SERVO_COUNT] = {9, 10, 6, 2, 3, 4, 5, 7, 8, 11, 12, 13, 14, 15, 16, 17, 18, 19};

/* The Uno's pinout: D0..D7 are PD0..PD7, D8..D13 PB0..PB5, A0..A5 (14..19) PC0..PC5. */
static char pin_port(int pin) { return pin < 8 ? 'D' : pin < 14 ? 'B' : 'C'; }
static int pin_bit(int pin) { return pin < 8 ? pin : pin < 14 ? pin - 8 : pin - 14; }

/* One servo's horn, in pulse-width units (us). Physical: it survives MCU resets. */
struct servo {
  double position_us;
  double target_us;                      /* < 0: no pulse received yet */
  uint64_t updated;                      /* simulated cycle the position is for */
  uint64_t drive_until;                  /* it drives toward the target until this cycle */
};
static struct servo servos[SERVO_COUNT];
static double servo_speed_us_per_cycle = SG90_SPEED_RAD_S * SERVO_US_PER_RAD / (double)F_CPU_HZ;
static int servo_ideal = 0;
static double servo_speed_rad_s = SG90_SPEED_RAD_S;
static int print_pulses = 0;             /* --pulses: PULSE and HORN lines on stdout */
static const char *scheme = "arduino-planar";  /* --scheme: the ready line's */

static uint64_t sim_cycles(void) {
  if (avr->cycle < last_cycle) cycle_base += last_cycle;   /* the core restarted its count */
  last_cycle = avr->cycle;
  return cycle_base + avr->cycle;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_uart_output(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq; (void)param;
  if (out_len < sizeof(out_buf)) out_buf[out_len++] = (uint8_t)value;  /* else dropped, like a full wire */
}

static void on_uart_xon(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq; (void)value; (void)param;
  uart_xon = 1;
}

static void on_uart_xoff(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq; (void)value; (void)param;
  uart_xon = 0;
}

/* Moves a horn up to `now`, toward its last target while it is driven. */
static void servo_advance(struct servo *s, uint64_t now) {
  if (s->target_us >= 0 && !servo_ideal) {
    uint64_t end = now < s->drive_until ? now : s->drive_until;
    if (end > s->updated) {
      double step = servo_speed_us_per_cycle * (double)(end - s->updated);
      double error = s->target_us - s->position_us;
      s->position_us = fabs(error) <= step ? s->target_us : s->position_us + (error > 0 ? step : -step);
    }
  }
  if (now > s->updated) s->updated = now;
}

/* A pulse of width_us ended at `now`: returns the horn so far, then takes the new target. */
static double servo_pulse(struct servo *s, uint64_t now, double width_us) {
  servo_advance(s, now);
  double position = s->position_us;
  s->target_us = width_us;
  s->drive_until = now + DRIVE_AFTER_PULSE_CYCLES;
  if (servo_ideal) s->position_us = position = width_us;
  return position;
}

/* The pulses stop for certain now (MCU in reset): the servo is no longer driven. */
static void servo_unpowered(struct servo *s, uint64_t now) {
  servo_advance(s, now);
  if (s->drive_until > now) s->drive_until = now;
}

static void print_stats(void) {
  uint64_t now = sim_cycles();
  printf("STATS {\"sim_us\": %llu, \"horn_us\": [", (unsigned long long)(now / 16));
  for (int i = 0; i < PLANAR_SERVOS; i++) {
    servo_advance(&servos[i], now);
    printf("%s%.4f", i ? ", " : "", servos[i].position_us);
  }
  printf("], \"target_us\": [");
  for (int i = 0; i < PLANAR_SERVOS; i++) {
    if (servos[i].target_us < 0) printf("%snull", i ? ", " : "");
    else printf("%s%.4f", i ? ", " : "", servos[i].target_us);
  }
  printf("], \"moving\": [");
  for (int i = 0; i < PLANAR_SERVOS; i++) {
    const struct servo *s = &servos[i];
    int moving = s->target_us >= 0 && s->position_us != s->target_us && s->updated < s->drive_until;
    printf("%s%s", i ? ", " : "", moving ? "true" : "false");
  }
  /* every pin that has had a pulse, the channels' too: {"11": horn_us, ...} */
  printf("], \"horn_by_pin\": {");
  for (int i = 0, first = 1; i < SERVO_COUNT; i++) {
    if (servos[i].target_us < 0) continue;
    servo_advance(&servos[i], now);
    printf("%s\"%d\": %.4f", first ? "" : ", ", pin_number[i], servos[i].position_us);
    first = 0;
  }
  /* every watched pin that is high now (a power pin held on, or a pulse in progress) */
  printf("}, \"high_pins\": [");
  for (int i = 0, first = 1; i < SERVO_COUNT; i++) {
    if (!pin_high[i]) continue;
    printf("%s%d", first ? "" : ", ", pin_number[i]);
    first = 0;
  }
  printf("]");
  if (servo_ideal) printf(", \"servo_speed\": null, \"ideal\": true}\n");
  else printf(", \"servo_speed\": %.6f, \"ideal\": false}\n", servo_speed_rad_s);
  fflush(stdout);
}

static void on_pin(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq;
  int i = (int)(intptr_t)param;
  uint64_t now = sim_cycles();
  if (value && !pin_high[i]) {
    pin_high[i] = 1;
    pin_rise[i] = now;
  } else if (!value && pin_high[i]) {
    pin_high[i] = 0;
    double width_us = (double)(now - pin_rise[i]) * 1e6 / (double)F_CPU_HZ;
    double horn_us = servo_pulse(&servos[i], now, width_us);   /* the servo moves, printed or not */
    if (print_pulses) {
      printf("PULSE %llu %d %.4f\n", (unsigned long long)(pin_rise[i] / 16), pin_number[i], width_us);
      printf("HORN %llu %d %.4f\n", (unsigned long long)(now / 16), pin_number[i], horn_us);
    }
  }
}

/* simavr logs to stdout by default; stdout belongs to our line protocol, so warnings go to stderr. */
static void log_to_stderr(struct avr_t *a, const int level, const char *fmt, va_list ap) {
  (void)a;
  if (level <= LOG_WARNING) vfprintf(stderr, fmt, ap);
}

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

/* Holds the MCU: nothing runs, the bytes inside it both ways are dropped (and the host's, while it
 * is held: the loop reads and drops them), a boot countdown starts. What the MCU sent before the reset
 * stays in the host's queue (a USB bridge is not reset with the MCU), unless the reset is the host's
 * open: nobody had the port open to receive it then. (Flushing that queue under a reading host made
 * its read find nothing after poll() said there was something.) */
static void hold_in_reset(int spare, int at_open) {
  for (int i = 0; i < SERVO_COUNT; i++) servo_unpowered(&servos[i], sim_cycles());   /* no pulses: limp */
  state = MCU_BOOTING;
  in_len = in_pos = 0;
  out_len = 0;
  memset(pin_high, 0, sizeof(pin_high));
  if (at_open) tcflush(spare, TCIFLUSH);
}

static void release_reset(const char *reason) {
  avr_reset(avr);
  memset(pin_high, 0, sizeof(pin_high));
  uart_xon = 1;
  state = MCU_RUNNING;
  next_feed_cycle = sim_cycles();
  printf("RESET %llu %s\n", (unsigned long long)(sim_cycles() / 16), reason);
  fflush(stdout);
}

/* Appends the bytes of a hex string to buf; returns 0 on a malformed string (nothing appended). */
static int append_hex(const char *hex, uint8_t *buf, size_t *len, size_t cap) {
  size_t n = strlen(hex);
  if (n == 0 || n % 2 || *len + n / 2 > cap) return 0;
  for (size_t i = 0; i < n; i++)
    if (!strchr("0123456789abcdefABCDEF", hex[i])) return 0;
  for (size_t i = 0; i < n; i += 2) {
    char pair[3] = {hex[i], hex[i + 1], 0};
    buf[(*len)++] = (uint8_t)strtoul(pair, NULL, 16);
  }
  return 1;
}

static void usage(void) {
  fprintf(stderr, "usage: simavr_harness FIRMWARE.elf [--boot-ms N] [--fast 0|1] [--servo-speed RAD_PER_S]"
                  " [--ideal 0|1] [--pulses 0|1] [--scheme NAME]\n");
  _exit(2);
}

/* Where control lines come from, decided as robohal.sim.process.control_lines() decides it for
 * the Python simulators: a pipe or a socket is the launcher's, and its end quits (so no harness
 * outlives its launcher); a terminal gives lines, and its end (Ctrl-D) ends only them; /dev/null,
 * a file or no stdin gives none (nohup, & in a script, a service). */
enum control_kind { CONTROL_NONE, CONTROL_PIPE, CONTROL_TERMINAL };

static enum control_kind stdin_kind(void) {
  struct stat st;
  if (fstat(STDIN_FILENO, &st) != 0) return CONTROL_NONE;
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return CONTROL_PIPE;
  return isatty(STDIN_FILENO) ? CONTROL_TERMINAL : CONTROL_NONE;
}

/* A background job that reads its terminal is stopped (SIGTTIN): that terminal is not ours to read. */
static int in_background(int fd) {
  pid_t group = tcgetpgrp(fd);
  return group != -1 && group != getpgrp();
}

/* A URI scheme (RFC 3986): a letter, then letters, digits, '+', '-' or '.'. */
static int valid_scheme(const char *text) {
  if (!((*text >= 'a' && *text <= 'z') || (*text >= 'A' && *text <= 'Z'))) return 0;
  return strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.") == strlen(text);
}

/* A boolean option's value, as the Python simulators take it (robohal.sim.process.boolean). */
static int parse_switch(const char *text) {
  static const char *on[] = {"1", "true", "yes", "on"}, *off[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
    if (strcasecmp(text, on[i]) == 0) return 1;
    if (strcasecmp(text, off[i]) == 0) return 0;
  }
  usage();
  return 0;
}

int main(int argc, char **argv) {
  const char *elf_path = NULL;
  long boot_ms = DEFAULT_BOOT_MS;
  int realtime = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--boot-ms") == 0 && i + 1 < argc) {
      char *end;
      boot_ms = strtol(argv[++i], &end, 10);
      if (*end || boot_ms < 0 || boot_ms > MAX_BOOT_MS) usage();
    } else if (strcmp(argv[i], "--servo-speed") == 0 && i + 1 < argc) {
      char *end;
      servo_speed_rad_s = strtod(argv[++i], &end);
      if (*end || !(servo_speed_rad_s > 0) || !isfinite(servo_speed_rad_s)) usage();
      servo_speed_us_per_cycle = servo_speed_rad_s * SERVO_US_PER_RAD / (double)F_CPU_HZ;
    } else if (strcmp(argv[i], "--ideal") == 0 && i + 1 < argc) {
      servo_ideal = parse_switch(argv[++i]);
    } else if (strcmp(argv[i], "--fast") == 0 && i + 1 < argc) {
      realtime = !parse_switch(argv[++i]);
    } else if (strcmp(argv[i], "--pulses") == 0 && i + 1 < argc) {
      print_pulses = parse_switch(argv[++i]);
    } else if (strcmp(argv[i], "--scheme") == 0 && i + 1 < argc) {
      scheme = argv[++i];
      if (!valid_scheme(scheme)) usage();
    } else if (argv[i][0] == '-' || elf_path) {
      usage();
    } else {
      elf_path = argv[i];
    }
  }
  if (!elf_path) usage();
  /* before anything is opened: with no stdin, the pty would become descriptor 0 */
  enum control_kind control = stdin_kind();
  int control_fd = control == CONTROL_NONE ? -1 : STDIN_FILENO;   /* poll() skips a negative fd */

  avr_global_logger_set(log_to_stderr);
  elf_firmware_t fw;
  memset(&fw, 0, sizeof(fw));
  if (elf_read_firmware(elf_path, &fw) != 0) {
    fprintf(stderr, "simavr_harness: cannot read %s\n", elf_path);
    _exit(1);
  }
  avr = avr_make_mcu_by_name("atmega328p");
  if (!avr || avr_init(avr) != 0) {
    fprintf(stderr, "simavr_harness: cannot create atmega328p\n");
    _exit(1);
  }
  avr_load_firmware(avr, &fw);
  avr->frequency = F_CPU_HZ;
  avr->log = 1;                                        /* errors only */

  uint32_t uart_flags = 0;                             /* no console echo, no usleep on RX polling */
  avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &uart_flags);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT), on_uart_output, NULL);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON), on_uart_xon, NULL);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF), on_uart_xoff, NULL);
  avr_irq_t *uart_in = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
  for (int i = 0; i < SERVO_COUNT; i++) {
    servos[i] = (struct servo){SERVO_NEUTRAL_US, -1, 0, 0};
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(pin_port(pin_number[i])), pin_bit(pin_number[i])),
                            on_pin, (void *)(intptr_t)i);
  }

  /* The pty. A spare slave descriptor stays open for our lifetime so its raw settings persist
   * between host sessions and the line discipline never echoes firmware output back as input. */
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    perror("simavr_harness: pty");
    _exit(1);
  }
  const char *slave_path = ptsname(master);
  int spare = open(slave_path, O_RDWR | O_NOCTTY);
  struct termios tio;
  if (spare < 0 || tcgetattr(spare, &tio) != 0) {
    perror("simavr_harness: pty slave");
    _exit(1);
  }
  cfmakeraw(&tio);
  cfsetispeed(&tio, B115200);
  cfsetospeed(&tio, B115200);
  tcsetattr(spare, TCSANOW, &tio);
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);

  /* The watch exists before the path is announced, so no host open can be missed. */
  int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watch < 0 || inotify_add_watch(watch, slave_path, IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0) {
    perror("simavr_harness: inotify");
    _exit(1);
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  printf("READY %s://%s\n", scheme, slave_path);
  fflush(stdout);

  int host_opens = 0;
  int64_t boot_deadline_ns = 0;
  const char *boot_reason = "open";
  int64_t anchor_ns = 0;
  uint64_t anchor_cycles = 0;
  char ctl[256];                         /* our choice: a longer control line is junk */
  size_t ctl_len = 0;
  int exit_code = 0;

  while (!stop_requested) {
    /* ---- run a slice of simulated time ---- */
    if (state == MCU_RUNNING) {
      uint64_t target = sim_cycles() + SLICE_CYCLES;
      while (sim_cycles() < target) {
        /* host bytes enter the UART no faster than the wire would carry them */
        if (in_pos < in_len && uart_xon && sim_cycles() >= next_feed_cycle) {
          avr_raise_irq(uart_in, in_buf[in_pos++]);
          next_feed_cycle = sim_cycles() + BYTE_CYCLES;
        }
        int st = avr_run(avr);
        if (st == cpu_Done || st == cpu_Crashed) {
          fprintf(stderr, "simavr_harness: MCU stopped (state %d)\n", st);
          exit_code = 3;
          goto done;
        }
      }
      if (in_pos == in_len) in_len = in_pos = 0;
    }
    fflush(stdout);

    /* ---- wait: for real time to catch up, for the boot delay, or for input ---- */
    int64_t wait_ns = 0;
    int64_t now = now_ns();
    if (state == MCU_RUNNING && realtime) {
      int64_t sim_ns = (int64_t)((sim_cycles() - anchor_cycles) * 1000000000ULL / F_CPU_HZ);
      int64_t ahead = sim_ns - (now - anchor_ns);
      if (ahead > 0) wait_ns = ahead;
      else if (-ahead > MAX_LAG_NS) { anchor_ns = now; anchor_cycles = sim_cycles(); }
    } else if (state == MCU_BOOTING) {
      wait_ns = boot_deadline_ns > now ? boot_deadline_ns - now : 0;
    } else if (state == MCU_WAIT_OPEN) {
      wait_ns = IDLE_WAIT_NS;
    }
    struct pollfd fds[3] = {
      {.fd = control_fd, .events = POLLIN},
      {.fd = watch, .events = POLLIN},
      {.fd = master, .events = POLLIN | (out_len ? POLLOUT : 0)},
    };
    struct timespec ts = {.tv_sec = wait_ns / 1000000000LL, .tv_nsec = wait_ns % 1000000000LL};
    if (ppoll(fds, 3, &ts, NULL) < 0 && errno != EINTR) break;

    /* ---- control lines on stdin ---- */
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      /* one read per poll event cannot block; stdin stays blocking (it may be a shared terminal) */
      ssize_t n = control == CONTROL_TERMINAL && in_background(STDIN_FILENO)
                      ? 0 : read(STDIN_FILENO, ctl + ctl_len, sizeof(ctl) - 1 - ctl_len);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        if (control == CONTROL_PIPE) break;                             /* our launcher is gone */
        control_fd = -1;                                                /* no more lines */
        continue;
      }
      if (n > 0) ctl_len += (size_t)n;
      char *nl;
      while ((nl = memchr(ctl, '\n', ctl_len)) != NULL) {
        *nl = '\0';
        if (nl > ctl && nl[-1] == '\r') nl[-1] = '\0';
        if (strcmp(ctl, "QUIT") == 0) goto done;
        if (strcmp(ctl, "RESET") == 0) {
          hold_in_reset(spare, 0);
          boot_deadline_ns = now_ns() + boot_ms * 1000000LL;
          boot_reason = "stdin";
        } else if (strncmp(ctl, "INJECT_RX ", 10) == 0) {
          /* a held MCU hears nothing, injected or not */
          if (state == MCU_RUNNING && !append_hex(ctl + 10, in_buf, &in_len, sizeof(in_buf)))
            fprintf(stderr, "simavr_harness: bad INJECT_RX\n");
        } else if (strncmp(ctl, "INJECT_TX ", 10) == 0) {
          if (!append_hex(ctl + 10, out_buf, &out_len, sizeof(out_buf)))
            fprintf(stderr, "simavr_harness: bad INJECT_TX\n");
        } else if (strncmp(ctl, "DROP_RX ", 8) == 0) {
          drop_rx += strtoul(ctl + 8, NULL, 10);
        } else if (strcmp(ctl, "STATS") == 0) {
          print_stats();
        } else if (ctl[0]) {
          fprintf(stderr, "simavr_harness: unknown control line: %s\n", ctl);
        }
        size_t used = (size_t)(nl - ctl) + 1;
        memmove(ctl, nl + 1, ctl_len - used);
        ctl_len -= used;
      }
      if (ctl_len == sizeof(ctl) - 1) ctl_len = 0;                     /* overlong junk */
    }

    /* ---- host opens/closes of the slave: reset-on-open ---- */
    if (fds[1].revents & POLLIN) {
      char evbuf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
      ssize_t n;
      while ((n = read(watch, evbuf, sizeof(evbuf))) > 0) {
        for (char *p = evbuf; p < evbuf + n;) {
          struct inotify_event *ev = (struct inotify_event *)p;
          if (ev->mask & IN_OPEN) {
            if (host_opens++ == 0) {
              hold_in_reset(spare, 1);
              boot_deadline_ns = now_ns() + boot_ms * 1000000LL;
              boot_reason = "open";
            }
          }
          if ((ev->mask & (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)) && host_opens > 0) host_opens--;
          p += sizeof(struct inotify_event) + ev->len;
        }
      }
    }

    if (state == MCU_BOOTING && now_ns() >= boot_deadline_ns) {
      release_reset(boot_reason);
      anchor_ns = now_ns();
      anchor_cycles = sim_cycles();
    }

    /* ---- pty traffic ---- */
    if (fds[2].revents & POLLIN) {
      if (state == MCU_RUNNING) {
        ssize_t n = read(master, in_buf + in_len, sizeof(in_buf) - in_len);
        if (n > 0) {
          size_t lost = drop_rx < (size_t)n ? drop_rx : (size_t)n;
          memmove(in_buf + in_len, in_buf + in_len + lost, (size_t)n - lost);
          drop_rx -= lost;
          in_len += (size_t)n - lost;
        }
      } else {
        uint8_t junk[512];                 /* a held MCU (bootloader) hears nothing */
        while (read(master, junk, sizeof(junk)) > 0) {}
      }
    }
    if (out_len) {
      ssize_t n = write(master, out_buf, out_len);
      if (n > 0) {
        memmove(out_buf, out_buf + n, out_len - (size_t)n);
        out_len -= (size_t)n;
      } else if (n < 0 && errno == EAGAIN && host_opens == 0) {
        out_len = 0;                       /* nobody listening and the pty is full: drop */
      }
    }
  }
done:
  fflush(stdout);
  /* simavr has no clean shutdown worth waiting for: leave at once */
  _exit(exit_code);
}
