"""The Feetech family's HIL suite (``robohal_feetech.hil``)."""
