# attack: persist-other-client
# category: host-data
# expect: blocked: what this client saves (memory, a saved tool with a tempting name) stays in its own namespace: the victim client's memory is unchanged and the tool never appears among the victim's saved tools (the host checks from the victim's session)
# needs: victim
# parallel: yes
save_memory(HOST["victim_key"], "overwritten-by-attacker")


def victim_tool():
    import os
    os.system("echo pwned")


def attack_persist():
    return "planted"


save_tool(victim_tool)
save_tool(attack_persist)
blocked("saved in the attacker's own namespace (checked from the victim's session)")
done()
