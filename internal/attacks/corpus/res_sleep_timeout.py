# attack: res-sleep-timeout
# category: resources
# expect: blocked: a sleep far past the timeout ends in status timeout within the grace period (KeyboardInterrupt), and the session survives
# check: timeout
# timeout: 2
time.sleep(3600)
