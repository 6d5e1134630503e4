"""fireval.proxies"""
