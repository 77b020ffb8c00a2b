"""E-mail for the business tools (issue 17): spoken addresses, their validation, and delivery.

``engine.email.spoken`` turns what a caller said into an address (or a refusal saying what was understood);
``engine.email.domain`` asks DNS whether the domain can receive mail.
"""
