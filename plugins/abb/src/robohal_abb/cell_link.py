"""The EGM backend's link to its cell over Robot Web Services (``abb-egm://...?rws=...``).

At ``connect()`` the cell is checked (motors, RAPID, the RobohalEgm module), so a cell that cannot
stream fails at once with the reason instead of after the EGM timeout; with ``rws_start=1`` it is
started (motors on, RAPID running) and ``close()`` stops RAPID again (and turns the motors off
if robohal turned them on). When the EGM stream ends, the controller's event log says why: the
backend adds that to the error it raises (:mod:`.stream_end`).
"""

from __future__ import annotations

import logging

from robohal.errors import ConnectFailed, RobohalError

from .cell import AbbCell, CellOptions
from .rws import RwsError

log = logging.getLogger("robohal.abb")


class CellLink:
    def __init__(self, options: CellOptions) -> None:
        self.options = options
        self.cell = AbbCell.from_options(options)
        self._mark: int | None = None  # the event log's newest sequence number before the stream began
        self._started = False  # robohal started RAPID: close() stops it
        self._motors_were_on = True
        self._explained: tuple[object, str] | None = None

    @property
    def url(self) -> str:
        return self.cell.rws.url

    def bring_up(self) -> None:
        """Check the cell, or start it (``rws_start=1``); :class:`ConnectFailed` with the reason
        when it cannot stream EGM. Robohal's own RWS errors (refused login, nothing answering)
        are ConnectFailed already; the rest become one."""
        try:
            self.cell.rws.open()
            self._mark = self.cell.last_elog_seqnum()
            if self.options.start:
                self._motors_were_on = self.cell.rws.controller_state() == "motoron"
                self._started = self.cell.start()
                if self._started:
                    log.info("%s: motors on and RAPID started for EGM", self.url)
                return
            status = self.cell.status()
        except ConnectFailed:
            raise
        except RwsError as exc:
            raise ConnectFailed(f"abb-egm: the cell's RWS at {self.url}: {exc}", address=self.url) from exc
        if not status.ready:
            raise ConnectFailed(
                f"abb-egm: the cell at {self.url} cannot stream EGM: {'; '.join(status.problems)}. Start it with"
                " `robohal abb start URI`, or connect with rws_start=1 to let robohal start and stop it",
                address=self.url)

    def restart(self) -> None:
        """For ``recover()`` with ``rws_start=1``: start the cell again (an emergency stop is refused)."""
        if not self.options.start:
            return
        self._mark = self.cell.last_elog_seqnum()
        self._started = self.cell.start() or self._started
        self._explained = None

    def leave(self) -> None:
        """Stop what robohal started, then log out; never raises (close() must finish)."""
        try:
            if self._started:
                self.cell.stop(motors_off=not self._motors_were_on)
                log.info("%s: RAPID stopped%s", self.url, "" if self._motors_were_on else ", motors off")
        except RobohalError as exc:
            log.warning("%s: could not stop the cell's RAPID: %s; stop it at the pendant or with"
                        " `robohal abb stop URI`", self.url, exc)
        finally:
            self._started = False
            self.cell.close()

    def note(self, key: object) -> str:
        """Why the stream ended, from the event log, as text to append to an error (asked once per
        ``key``: the same end is not asked about twice)."""
        if self._mark is None:
            return ""
        if self._explained is not None and self._explained[0] == key:
            return self._explained[1]
        try:
            reason = self.cell.why_stream_ended(self._mark)
            text = f"; the controller's event log says: {reason}" if reason else \
                "; the controller's event log names no cause"
        except RobohalError as exc:
            text = f"; the controller's event log could not be read ({exc})"
        self._explained = (key, text)
        return text
