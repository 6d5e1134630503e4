"""fireval.judging"""
