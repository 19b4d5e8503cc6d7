"""The sandbox: how tools touch files, processes and the network without leaving their bounds."""
