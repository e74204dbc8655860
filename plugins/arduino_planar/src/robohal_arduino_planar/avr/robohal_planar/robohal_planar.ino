// robohal_planar: firmware for a two-link planar servo arm on an Arduino Uno (ATmega328P, 16 MHz).
//
// Speaks the robohal planar line protocol (plugins/arduino_planar/PROTOCOL.md) at 115200 baud:
// ASCII frames "<CMD> <seq> <args...> *<crc8 hex>\n", one reply line per frame.
// Servo 1 on D9, servo 2 on D10, driven by Timer1 hardware PWM (servo_timer1.h); servo 3, the
// tool (a gripper or a pen lift), on D6, timed by interrupts (servo_tool.h).
// Or, once a host configures channels (SERVO), up to 12 servos on any pins, an arm file's, timed
// one after the other on Timer1 as Arduino's Servo library does (servo_channels.h); the planar
// arm's commands are then refused until the next reset.
// Every servo stays detached after reset until its first command (SET for the arm, TOOL for the
// tool, MOVE for a channel), so nothing jumps at power-up.
#include <Arduino.h>
#include <stdlib.h>
#include <string.h>
#include "servo_timer1.h"
#include "servo_tool.h"
#include "servo_channels.h"
#include "soft_start.h"

#define FW_NAME "robohal_planar"
#define FW_VERSION "3.1.0"
static const uint8_t PROTOCOL_VERSION = 3;
static const uint8_t SERVO_COUNT = 3;          // the arm's two and the tool

// Absolute safety envelope: no configuration can move a limit outside it.
static const uint16_t ENVELOPE_MIN_US = 500;
static const uint16_t ENVELOPE_MAX_US = 2500;
static const uint16_t DEFAULT_MIN_US = 1000;
static const uint16_t DEFAULT_MAX_US = 2000;
static const uint16_t WATCHDOG_MIN_MS = 50;
static const uint16_t WATCHDOG_MAX_MS = 60000;
static const uint16_t DEFAULT_WATCHDOG_MS = 1000;

// Longest accepted line without its newline; well under the 64-byte serial RX buffer.
static const uint8_t LINE_MAX = 48;
static const uint8_t MAX_TOKENS = 8;

// Error codes (PROTOCOL.md lists them with their meaning).
static const uint8_t E_BAD_CHECKSUM = 1;
static const uint8_t E_UNKNOWN_CMD = 2;
static const uint8_t E_BAD_ARGS = 3;
static const uint8_t E_OUT_OF_LIMITS = 4;
static const uint8_t E_LINE_TOO_LONG = 5;
static const uint8_t E_BAD_FRAME = 6;
static const uint8_t E_NO_SETPOINT = 7;
static const uint8_t E_WRONG_MODE = 8;
static const uint8_t E_NO_SERVO = 9;

// Pins a channel may use: D2..D13 and A0..A5 (14..19); D0 and D1 are the serial port's.
static const uint8_t CHANNEL_PIN_MIN = 2;
static const uint8_t CHANNEL_PIN_MAX = 19;

static const long NO_SEQ = -1;

// ---- state (all of it is reset with the MCU) ----
static char line[LINE_MAX + 1];
static uint8_t lineLen = 0;
static bool lineTooLong = false;
static bool lineBinary = false;

static uint16_t setpointUs[2] = {0, 0};        // 0 = never commanded since reset
static bool attached[2] = {false, false};
static uint16_t limitMinUs[2] = {DEFAULT_MIN_US, DEFAULT_MIN_US};
static uint16_t limitMaxUs[2] = {DEFAULT_MAX_US, DEFAULT_MAX_US};
static uint16_t toolSetpointUs = 0;            // 0 = never commanded since reset
static bool toolAttached = false;
static uint16_t toolMinUs = DEFAULT_MIN_US;
static uint16_t toolMaxUs = DEFAULT_MAX_US;

// Channels (servo mode): pin 0 = not configured; setpoint 0 = never commanded since configured.
static bool servoMode = false;                 // set by the first SERVO, until reset
static uint8_t chPin[CHANNELS_MAX];
static uint16_t chMinUs[CHANNELS_MAX], chMaxUs[CHANNELS_MAX], chSetpointUs[CHANNELS_MAX];
static bool chAttached[CHANNELS_MAX];
static uint8_t powerPin = 0;                   // the servos' power switch (POWER), 0 = none
static uint8_t powerState = 0;                 // its last POWER state: 0 low, 1 high, 2 soft-started

static uint16_t watchdogMs = DEFAULT_WATCHDOG_MS;  // 0 = off
static bool watchdogDetach = true;
static bool watchdogTripped = false;           // latched until the next valid frame
static uint32_t lastValidFrameMs = 0;

// Counters are uint32_t and wrap modulo 2^32.
static uint32_t countOk = 0, countBadChecksum = 0, countOverflow = 0, countGarbage = 0,
                countRejected = 0, countWatchdogTrips = 0;

// ---- checksum: CRC-8, polynomial 0x07, init 0x00, no reflection (CRC-8/SMBUS) ----
static uint8_t crc8(const char *data, uint8_t len) {
  uint8_t crc = 0;
  for (uint8_t i = 0; i < len; i++) {
    crc ^= (uint8_t)data[i];
    for (uint8_t b = 0; b < 8; b++) crc = (crc & 0x80) ? (uint8_t)((crc << 1) ^ 0x07) : (uint8_t)(crc << 1);
  }
  return crc;
}

// ---- reply building: "<TYPE> <seq|-> <fields...> *<CC>\n" ----
static char out[136];                          // the longest reply, STATE, is at most 127 bytes
static uint8_t outLen = 0;

static void outText(const char *s) {
  while (*s && outLen < sizeof(out) - 5) out[outLen++] = *s++;  // keep room for " *CC"
}

static void outField(const char *s) {
  outText(" ");
  outText(s);
}

static void outNumber(uint32_t v) {
  char buf[11];
  ultoa(v, buf, 10);
  outField(buf);
}

static void replyBegin(const char *type, long seq) {
  outLen = 0;
  outText(type);
  if (seq < 0) outField("-");
  else outNumber((uint32_t)seq);
}

static void replySend() {
  static const char hex[] = "0123456789ABCDEF";
  outText(" ");
  uint8_t crc = crc8(out, outLen);
  out[outLen++] = '*';
  out[outLen++] = hex[crc >> 4];
  out[outLen++] = hex[crc & 0x0F];
  out[outLen++] = '\n';
  Serial.write((const uint8_t *)out, outLen);
}

static const char *errorName(uint8_t code) {
  switch (code) {
    case E_BAD_CHECKSUM: return "BAD_CHECKSUM";
    case E_UNKNOWN_CMD: return "UNKNOWN_CMD";
    case E_BAD_ARGS: return "BAD_ARGS";
    case E_OUT_OF_LIMITS: return "OUT_OF_LIMITS";
    case E_LINE_TOO_LONG: return "LINE_TOO_LONG";
    case E_BAD_FRAME: return "BAD_FRAME";
    case E_NO_SETPOINT: return "NO_SETPOINT";
    case E_WRONG_MODE: return "WRONG_MODE";
    case E_NO_SERVO: return "NO_SERVO";
    default: return "UNKNOWN";
  }
}

static void replyError(long seq, uint8_t code) {
  replyBegin("ERR", seq);
  outNumber(code);
  outField(errorName(code));
  replySend();
}

static void reject(long seq, uint8_t code) {
  countRejected++;
  replyError(seq, code);
}

static const char *watchdogActionName() { return watchdogDetach ? "detach" : "hold"; }

// ---- servo outputs ----
static void applyOutputs() {
  servoOutput(setpointUs[0], attached[0], setpointUs[1], attached[1]);
}

static void applyToolOutput() {
  toolOutput(toolAttached ? toolSetpointUs : 0);
}

static void replyAck(long seq) {
  replyBegin("ACK", seq);
  outNumber(attached[0] ? setpointUs[0] : 0);  // the widths actually on the pins; 0 = no pulses
  outNumber(attached[1] ? setpointUs[1] : 0);
  replySend();
}

// ---- argument parsing ----
// Decimal 0..65535, digits only: no sign, no spaces, at most 5 digits.
static bool parseU16(const char *s, uint16_t *value) {
  uint32_t v = 0;
  uint8_t n = 0;
  if (!*s) return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || ++n > 5) return false;
    v = v * 10 + (uint8_t)(*s - '0');
  }
  if (v > 65535UL) return false;
  *value = (uint16_t)v;
  return true;
}

static int8_t hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// ---- commands; argv[0] is the command, argv[1] the sequence number ----
static void cmdHello(long seq, uint8_t argc) {
  if (argc != 2) { reject(seq, E_BAD_ARGS); return; }
  replyBegin("HELLO", seq);
  outNumber(PROTOCOL_VERSION);
  outField(FW_NAME);
  outField(FW_VERSION);
  outNumber(SERVO_COUNT);
  for (uint8_t i = 0; i < 2; i++) {
    outNumber(limitMinUs[i]);
    outNumber(limitMaxUs[i]);
  }
  outNumber(toolMinUs);
  outNumber(toolMaxUs);
  outNumber(watchdogMs);
  outField(watchdogActionName());
  outNumber(CHANNELS_MAX);
  replySend();
}

static void cmdPing(long seq, uint8_t argc) {
  if (argc != 2) { reject(seq, E_BAD_ARGS); return; }
  replyBegin("PONG", seq);
  replySend();
}

static void cmdSet(long seq, uint8_t argc, char **argv) {
  uint16_t w[2];
  if (argc != 4 || !parseU16(argv[2], &w[0]) || !parseU16(argv[3], &w[1])) { reject(seq, E_BAD_ARGS); return; }
  if (servoMode) { reject(seq, E_WRONG_MODE); return; }
  for (uint8_t i = 0; i < 2; i++) {
    if (w[i] < limitMinUs[i] || w[i] > limitMaxUs[i]) { reject(seq, E_OUT_OF_LIMITS); return; }
  }
  setpointUs[0] = w[0];
  setpointUs[1] = w[1];
  attached[0] = attached[1] = true;
  applyOutputs();
  replyAck(seq);
}

static void cmdGet(long seq, uint8_t argc) {
  if (argc != 2) { reject(seq, E_BAD_ARGS); return; }
  replyBegin("STATE", seq);
  outNumber(setpointUs[0]);
  outNumber(setpointUs[1]);
  outNumber(toolSetpointUs);
  outNumber(attached[0] ? 1 : 0);
  outNumber(attached[1] ? 1 : 0);
  outNumber(toolAttached ? 1 : 0);
  outNumber(watchdogMs);
  outField(watchdogActionName());
  outNumber(countWatchdogTrips);
  outNumber(countOk);
  outNumber(countBadChecksum);
  outNumber(countOverflow);
  outNumber(countGarbage);
  outNumber(countRejected);
  outNumber(millis());
  replySend();
}

static void cmdWatchdog(long seq, uint8_t argc, char **argv) {
  uint16_t ms;
  if (argc != 4 || !parseU16(argv[2], &ms)) { reject(seq, E_BAD_ARGS); return; }
  bool detach;
  if (strcmp(argv[3], "detach") == 0) detach = true;
  else if (strcmp(argv[3], "hold") == 0) detach = false;
  else { reject(seq, E_BAD_ARGS); return; }
  if (ms != 0 && (ms < WATCHDOG_MIN_MS || ms > WATCHDOG_MAX_MS)) { reject(seq, E_BAD_ARGS); return; }
  watchdogMs = ms;
  watchdogDetach = detach;
  replyBegin("WDOG", seq);
  outNumber(watchdogMs);
  outField(watchdogActionName());
  replySend();
}

static void cmdLimits(long seq, uint8_t argc, char **argv) {
  uint16_t v[4];
  if (argc != 6) { reject(seq, E_BAD_ARGS); return; }
  for (uint8_t i = 0; i < 4; i++) {
    if (!parseU16(argv[2 + i], &v[i])) { reject(seq, E_BAD_ARGS); return; }
  }
  for (uint8_t i = 0; i < 2; i++) {
    uint16_t lo = v[2 * i], hi = v[2 * i + 1];
    if (lo >= hi) { reject(seq, E_BAD_ARGS); return; }
  }
  if (servoMode) { reject(seq, E_WRONG_MODE); return; }
  for (uint8_t i = 0; i < 2; i++) {
    uint16_t lo = v[2 * i], hi = v[2 * i + 1];
    if (lo < ENVELOPE_MIN_US || hi > ENVELOPE_MAX_US) { reject(seq, E_OUT_OF_LIMITS); return; }
    // A stored setpoint must stay legal: ATTACH would otherwise output it.
    if (setpointUs[i] != 0 && (setpointUs[i] < lo || setpointUs[i] > hi)) { reject(seq, E_OUT_OF_LIMITS); return; }
  }
  for (uint8_t i = 0; i < 2; i++) {
    limitMinUs[i] = v[2 * i];
    limitMaxUs[i] = v[2 * i + 1];
  }
  replyBegin("LIMITS", seq);
  for (uint8_t i = 0; i < 4; i++) outNumber(v[i]);
  replySend();
}

// TOOL <width>: the tool's pulse width within its limits, or 0 for no pulses. Answered with the
// width now on D11, as ACK answers SET.
static void cmdTool(long seq, uint8_t argc, char **argv) {
  uint16_t w;
  if (argc != 3 || !parseU16(argv[2], &w)) { reject(seq, E_BAD_ARGS); return; }
  if (servoMode) { reject(seq, E_WRONG_MODE); return; }
  if (w != 0 && (w < toolMinUs || w > toolMaxUs)) { reject(seq, E_OUT_OF_LIMITS); return; }
  if (w != 0) toolSetpointUs = w;
  toolAttached = w != 0;
  applyToolOutput();
  replyBegin("TOOL", seq);
  outNumber(toolAttached ? toolSetpointUs : 0);
  replySend();
}

// TLIMITS <min> <max>: the tool's pulse limits, checked as LIMITS checks the arm's.
static void cmdToolLimits(long seq, uint8_t argc, char **argv) {
  uint16_t lo, hi;
  if (argc != 4 || !parseU16(argv[2], &lo) || !parseU16(argv[3], &hi) || lo >= hi) { reject(seq, E_BAD_ARGS); return; }
  if (servoMode) { reject(seq, E_WRONG_MODE); return; }
  if (lo < ENVELOPE_MIN_US || hi > ENVELOPE_MAX_US) { reject(seq, E_OUT_OF_LIMITS); return; }
  if (toolSetpointUs != 0 && (toolSetpointUs < lo || toolSetpointUs > hi)) { reject(seq, E_OUT_OF_LIMITS); return; }
  toolMinUs = lo;
  toolMaxUs = hi;
  replyBegin("TLIMITS", seq);
  outNumber(lo);
  outNumber(hi);
  replySend();
}

static void cmdAttach(long seq, uint8_t argc) {
  if (argc != 2) { reject(seq, E_BAD_ARGS); return; }
  if (servoMode) { reject(seq, E_WRONG_MODE); return; }
  if (setpointUs[0] == 0 || setpointUs[1] == 0) { reject(seq, E_NO_SETPOINT); return; }
  attached[0] = attached[1] = true;
  applyOutputs();
  replyAck(seq);
}

// Stops every output: the arm's, the tool's and every channel's (setpoints are kept).
static void detachAll() {
  attached[0] = attached[1] = false;
  toolAttached = false;
  if (servoMode) {
    for (uint8_t i = 0; i < CHANNELS_MAX; i++) {
      chAttached[i] = false;
      channelOutput(i, 0);
    }
  } else {
    applyOutputs();
    applyToolOutput();
  }
}

static void cmdDetach(long seq, uint8_t argc) {
  if (argc != 2) { reject(seq, E_BAD_ARGS); return; }
  detachAll();                                   // every servo, the tool and the channels too
  replyAck(seq);
}

// ---- channels (servo mode) ----
static bool anyChannelAttached() {
  for (uint8_t i = 0; i < CHANNELS_MAX; i++)
    if (chAttached[i]) return true;
  return false;
}

// The planar arm's outputs stop for good (until reset) and Timer1 becomes the channels' clock.
static void enterServoMode() {
  attached[0] = attached[1] = false;
  toolAttached = false;
  setpointUs[0] = setpointUs[1] = toolSetpointUs = 0;
  applyOutputs();
  applyToolOutput();
  TIMSK1 &= ~(1 << TOIE1);                     // the tool's frame-start interrupt is not the channels'
  servoMode = true;
  channelsBegin();
}

// SERVO <ch> <pin> <min> <max>: channel ch (1..12) on that pin with those pulse limits. A new pin
// starts without pulses and without a setpoint; on the same pin the setpoint must stay legal.
static void cmdServo(long seq, uint8_t argc, char **argv) {
  uint16_t ch, pin, lo, hi;
  if (argc != 6 || !parseU16(argv[2], &ch) || !parseU16(argv[3], &pin) || !parseU16(argv[4], &lo)
      || !parseU16(argv[5], &hi) || ch < 1 || ch > CHANNELS_MAX || pin < CHANNEL_PIN_MIN
      || pin > CHANNEL_PIN_MAX || lo >= hi) { reject(seq, E_BAD_ARGS); return; }
  uint8_t i = (uint8_t)(ch - 1);
  for (uint8_t j = 0; j < CHANNELS_MAX; j++) {
    if (j != i && chPin[j] == pin) { reject(seq, E_BAD_ARGS); return; }   // one pin, one servo
  }
  if (pin == powerPin) { reject(seq, E_BAD_ARGS); return; }
  if (lo < ENVELOPE_MIN_US || hi > ENVELOPE_MAX_US) { reject(seq, E_OUT_OF_LIMITS); return; }
  bool samePin = chPin[i] == pin;
  if (samePin && chSetpointUs[i] != 0 && (chSetpointUs[i] < lo || chSetpointUs[i] > hi)) {
    reject(seq, E_OUT_OF_LIMITS);
    return;
  }
  if (!servoMode) enterServoMode();
  if (!samePin) {
    chAttached[i] = false;
    chSetpointUs[i] = 0;
    channelOutput(i, 0);
    channelSetPin(i, (uint8_t)pin);
    chPin[i] = (uint8_t)pin;
  }
  chMinUs[i] = lo;
  chMaxUs[i] = hi;
  replyBegin("SERVO", seq);
  outNumber(ch);
  outNumber(pin);
  outNumber(lo);
  outNumber(hi);
  replySend();
}

// MOVE <first> <w>...: widths for channels first, first+1, ... (one to five of them), each within
// its limits (attaching it), or 0: that channel's pulses stop and its setpoint stays. All or nothing.
static void cmdMove(long seq, uint8_t argc, char **argv) {
  uint16_t first, w[MAX_TOKENS];
  uint8_t count = argc - 3;
  if (argc < 4 || !parseU16(argv[2], &first) || first < 1 || first + count - 1 > CHANNELS_MAX) {
    reject(seq, E_BAD_ARGS);
    return;
  }
  for (uint8_t k = 0; k < count; k++) {
    if (!parseU16(argv[3 + k], &w[k])) { reject(seq, E_BAD_ARGS); return; }
  }
  uint8_t base = (uint8_t)(first - 1);
  for (uint8_t k = 0; k < count; k++) {
    if (chPin[base + k] == 0) { reject(seq, E_NO_SERVO); return; }
  }
  for (uint8_t k = 0; k < count; k++) {
    uint8_t i = base + k;
    if (w[k] != 0 && (w[k] < chMinUs[i] || w[k] > chMaxUs[i])) { reject(seq, E_OUT_OF_LIMITS); return; }
  }
  replyBegin("MOVE", seq);
  outNumber(first);
  for (uint8_t k = 0; k < count; k++) {
    uint8_t i = base + k;
    if (w[k] != 0) chSetpointUs[i] = w[k];
    chAttached[i] = w[k] != 0;
    channelOutput(i, chAttached[i] ? chSetpointUs[i] : 0);
    outNumber(chAttached[i] ? chSetpointUs[i] : 0);
  }
  replySend();
}

// POWER <pin> <0|1|2>: drive a pin that switches the servos' supply (the Braccio shield's D12) low,
// high, or (2, since 3.1.0) high after the Braccio library's soft-start ramp (soft_start.h). Not a
// servo's pin: in servo mode no channel's, else none of D6, D9, D10. Until reset, when every pin is
// an input again (a shield's switch then turns the supply off).
static void cmdPower(long seq, uint8_t argc, char **argv) {
  uint16_t pin, on;
  if (argc != 4 || !parseU16(argv[2], &pin) || !parseU16(argv[3], &on) || pin < CHANNEL_PIN_MIN
      || pin > CHANNEL_PIN_MAX || on > 2) { reject(seq, E_BAD_ARGS); return; }
  bool servoPin = false;
  if (servoMode) {
    for (uint8_t j = 0; j < CHANNELS_MAX; j++) servoPin = servoPin || chPin[j] == pin;
  } else {
    servoPin = pin == 6 || pin == 9 || pin == 10;
  }
  if (servoPin || (powerPin != 0 && pin != powerPin)) { reject(seq, E_BAD_ARGS); return; }
  powerPin = (uint8_t)pin;
  if (on == 2 && powerState != 0) {
    // already on or coming up (a host that configures again after a lost link): a second ramp
    // would start from low and drop the supply
  } else {
    softStartStop();
    if (on == 2) {
      softStartBegin((uint8_t)pin);
    } else {
      digitalWrite(pin, on ? HIGH : LOW);
      pinMode(pin, OUTPUT);
    }
    powerState = (uint8_t)on;
  }
  replyBegin("POWER", seq);
  outNumber(pin);
  outNumber(on);
  replySend();
}

// SERVOS: the highest configured channel, a bit per attached channel (bit 0: channel 1) and
// every channel's setpoint up to the highest (0 = none).
static void cmdServos(long seq, uint8_t argc) {
  if (argc != 2) { reject(seq, E_BAD_ARGS); return; }
  uint8_t count = 0;
  uint16_t mask = 0;
  for (uint8_t i = 0; i < CHANNELS_MAX; i++) {
    if (chPin[i] != 0) count = i + 1;
    if (chAttached[i]) mask |= (uint16_t)1 << i;
  }
  replyBegin("SERVOS", seq);
  outNumber(count);
  outNumber(mask);
  for (uint8_t i = 0; i < count; i++) outNumber(chSetpointUs[i]);
  replySend();
}

// ---- one complete line (without newline), printable ASCII only ----
static void handleLine() {
  line[lineLen] = '\0';
  char *star = strrchr(line, '*');
  if (star == NULL || strlen(star + 1) != 2 || hexDigit(star[1]) < 0 || hexDigit(star[2]) < 0) {
    countGarbage++;
    replyError(NO_SEQ, E_BAD_FRAME);
    return;
  }
  uint8_t sent = (uint8_t)((hexDigit(star[1]) << 4) | hexDigit(star[2]));
  if (crc8(line, (uint8_t)(star - line)) != sent) {
    countBadChecksum++;
    replyError(NO_SEQ, E_BAD_CHECKSUM);  // the sequence number itself may be corrupt
    return;
  }
  *star = '\0';

  // A checksum-valid frame proves the host is alive, even if the command is then refused.
  countOk++;
  lastValidFrameMs = millis();
  watchdogTripped = false;

  char *argv[MAX_TOKENS];
  uint8_t argc = 0;
  for (char *tok = strtok(line, " "); tok != NULL; tok = strtok(NULL, " ")) {
    if (argc == MAX_TOKENS) { reject(NO_SEQ, E_BAD_ARGS); return; }
    argv[argc++] = tok;
  }
  uint16_t seq16;
  if (argc < 2 || !parseU16(argv[1], &seq16)) { reject(NO_SEQ, E_BAD_ARGS); return; }
  long seq = seq16;

  const char *cmd = argv[0];
  if (strcmp(cmd, "HELLO") == 0) cmdHello(seq, argc);
  else if (strcmp(cmd, "PING") == 0) cmdPing(seq, argc);
  else if (strcmp(cmd, "SET") == 0) cmdSet(seq, argc, argv);
  else if (strcmp(cmd, "GET") == 0) cmdGet(seq, argc);
  else if (strcmp(cmd, "WDOG") == 0) cmdWatchdog(seq, argc, argv);
  else if (strcmp(cmd, "LIMITS") == 0) cmdLimits(seq, argc, argv);
  else if (strcmp(cmd, "ATTACH") == 0) cmdAttach(seq, argc);
  else if (strcmp(cmd, "DETACH") == 0) cmdDetach(seq, argc);
  else if (strcmp(cmd, "TOOL") == 0) cmdTool(seq, argc, argv);
  else if (strcmp(cmd, "TLIMITS") == 0) cmdToolLimits(seq, argc, argv);
  else if (strcmp(cmd, "SERVO") == 0) cmdServo(seq, argc, argv);
  else if (strcmp(cmd, "MOVE") == 0) cmdMove(seq, argc, argv);
  else if (strcmp(cmd, "SERVOS") == 0) cmdServos(seq, argc);
  else if (strcmp(cmd, "POWER") == 0) cmdPower(seq, argc, argv);
  else reject(seq, E_UNKNOWN_CMD);
}

// Assembles lines; a newline always ends a line, so the stream resynchronises after any garbage.
static void receiveByte(uint8_t c) {
  if (c == '\r') return;                       // tolerate CRLF line ends
  if (c == '\n') {
    if (lineTooLong) {
      countOverflow++;
      replyError(NO_SEQ, E_LINE_TOO_LONG);
    } else if (lineBinary) {
      countGarbage++;
      replyError(NO_SEQ, E_BAD_FRAME);
    } else if (lineLen > 0) {
      handleLine();
    }                                          // empty lines are ignored: "\n" is a safe resync
    lineLen = 0;
    lineTooLong = lineBinary = false;
    return;
  }
  if (lineLen >= LINE_MAX) { lineTooLong = true; return; }
  if (c < 0x20 || c > 0x7E) lineBinary = true;
  line[lineLen++] = (char)c;
}

static void checkWatchdog() {
  if (watchdogMs == 0 || watchdogTripped || !(attached[0] || attached[1] || toolAttached || anyChannelAttached())) return;
  if ((uint32_t)(millis() - lastValidFrameMs) < watchdogMs) return;
  watchdogTripped = true;
  countWatchdogTrips++;
  if (watchdogDetach) detachAll();
  replyBegin("EVT", NO_SEQ);
  outField("WDT");
  outField(watchdogActionName());
  replySend();
}

void setup() {
  servoBegin();                                // outputs disconnected: no pulses until SET
  toolBegin();                                 // no pulses until TOOL
  Serial.begin(115200);
  lastValidFrameMs = millis();
  replyBegin("BOOT", NO_SEQ);
  outNumber(PROTOCOL_VERSION);
  outField(FW_NAME);
  outField(FW_VERSION);
  replySend();
}

void loop() {
  while (Serial.available() > 0) receiveByte((uint8_t)Serial.read());
  checkWatchdog();
}
