"""fireval.web"""
