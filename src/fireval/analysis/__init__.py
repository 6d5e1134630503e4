"""fireval.analysis"""
