"""The operator's desk: steering (say now, whisper), answers to approvals and tools' questions, the tool bench,
phone and e-mail commands, and the one command dispatcher remote consoles use."""
