"""What robohal needs to talk to a robot controller's own web services (ABB's Robot Web
Services, Franka's Desk), kept in one place so that every plugin handles secrets alike:

- :mod:`.private_files`: where robohal keeps its per-user files, and the owner-only rule for them
- :mod:`.credentials`: a service's user and password, from the environment or an owner-only file,
  never from a URI, a command line or a log
- :mod:`.tls`: a controller's self-signed certificate trusted on first use and pinned (as ssh
  does with host keys), or a CA bundle; a changed certificate is refused
- :mod:`.shared_tls`: a TLS connection that one thread reads while others write (a bare
  ``ssl.SSLSocket`` does not survive it)
"""
